# Sourced by the device scripts (benchmarks/device/*.sh): the Vulkan loader and
# wgpu's backend on a GPU machine without them installed. The loader packages
# come from scripts/gl-loaders.sh (`.gl/*.deb`, carried with the working tree);
# the NVIDIA ICD is used where the machine has one (VGPU_NO_LOADERS=1 leaves the
# machine's own libraries alone, for CPU runs). Sets OUT (default /tmp/out)
# and creates it.
OUT=${OUT:-/tmp/out}
export OUT
mkdir -p "$OUT"
if [ -d .gl ] && [ -z "${VGPU_NO_LOADERS:-}" ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export WGPU_BACKEND=vulkan

# variant_run WORK VDIR MODE ENTRY GRID BLOCK ARGS...: runs ENTRY of
# ptx-cases/kernels.ptx on the GPU (`--kernel-time 5`, outputs in WORK/o),
# checked or `unchecked` as MODE says, with the WGSL of VDIR/<ENTRY>.wgsl
# (VGPU_LOAD_WGSL) or, for an empty VDIR, as generated and dumped into
# WORK/dump-ENTRY-MODE; prints the run's output (VGPU: the binary).
variant_run() {
  local w=$1 vdir=$2 mode=$3 entry=$4 grid=$5 block=$6
  shift 6
  local a=() env=()
  for x in "$@"; do a+=(--arg "$x"); done
  [ "$mode" = unchecked ] && a+=(--unchecked)
  if [ -n "$vdir" ]; then
    env=(VGPU_LOAD_WGSL="$vdir")
  else
    env=(VGPU_DUMP_WGSL="$w/dump-$entry-$mode")
    mkdir -p "$w/dump-$entry-$mode"
  fi
  # SPV_DIR: the SPIR-V given to the driver kept as SPV_DIR/<entry>-<mode>-<tag>/
  # (VGPU_DUMP_SPV; the tag from variant_row, else "cur"), for pipeline_stats.
  if [ -n "${SPV_DIR:-}" ]; then
    env+=(VGPU_DUMP_SPV="$SPV_DIR/$entry-$mode-${SPV_TAG:-cur}")
    mkdir -p "$SPV_DIR/$entry-$mode-${SPV_TAG:-cur}"
  fi
  mkdir -p "$w/o"
  env "${env[@]}" timeout 120 "${VGPU:-./target/release/vgpu}" ptx run ptx-cases/kernels.ptx \
    --entry "$entry" --grid "$grid" --block "$block" --backend gpu --kernel-time 5 \
    --out-dir "$w/o" "${a[@]}" 2>&1
}

# variant_setup ROWS: for the variant scripts, VGPU (default the release
# build), ROWS (the rows' path without .jsonl, emptied), W (a fresh work
# folder holding the benchmark inputs of ptx_inputs.py and an output folder
# W/o), LN (default 2^23) and MM (default 4096), and the launch arguments of
# the three cases: LOR (lorenz_rk4, LN threads), MMA (matmul_tiled, MM x MM),
# RED (reduce_sum_atomic, 2^24). `one TAG VDIR MODE ENTRY GRID BLOCK ARGS...`
# then adds a row (variant_row).
variant_setup() {
  VGPU=${VGPU:-./target/release/vgpu}
  ROWS=$1
  : > "$ROWS.jsonl"
  LN=${LN:-8388608}
  MM=${MM:-4096}
  export LN MM
  W=$(mktemp -d)
  python3 benchmarks/device/ptx_inputs.py "$W"
  mkdir -p "$W/o"
  LOR=($((LN / 256)),1,1 256,1,1 "$W/state.bin" "$W/rho.bin" f32:0.001 s32:1000 "s32:$LN")
  MMA=($((MM / 16)),$((MM / 16)),1 16,16,1 "$W/A.bin" "$W/B.bin" "$W/C.bin" "s32:$MM" "s32:$MM" "s32:$MM")
  RED=(65536,1,1 256,1,1 "$W/x.bin" "$W/out.bin" s32:16777216)
}

# case_args ENTRY: args, the launch arguments (grid, block, arguments) of
# ENTRY among variant_setup's three cases (matmul_tiled for any other name).
case_args() {
  case $1 in
    lorenz_rk4) args=("${LOR[@]}");;
    reduce_sum_atomic) args=("${RED[@]}");;
    *) args=("${MMA[@]}");;
  esac
}

# variant_row ROWS TAG VDIR MODE ENTRY GRID BLOCK ARGS...: variant_run in W,
# the run's output appended to ROWS.log and one JSON row (entry, mode,
# variant TAG, kernel_seconds, the output's md5) to ROWS.jsonl (and printed).
variant_row() {
  local rows=$1 tag=$2 mode=$4 entry=$5
  local log ks of=C.bin sum
  log=$(SPV_TAG=$tag variant_run "$W" "$3" "$mode" "$entry" "${@:6}")
  { echo "== $tag $entry $mode"; echo "$log"; } >> "$rows.log"
  ks=$(echo "$log" | awk '$1=="kernel_seconds"{print $2}')
  [ "$entry" = lorenz_rk4 ] && of=state.bin
  [ "$entry" = reduce_sum_atomic ] && of=out.bin
  sum=$(md5sum "$W/o/$of" 2>/dev/null | cut -c1-12)
  echo "{\"entry\":\"$entry\",\"mode\":\"$mode\",\"variant\":\"$tag\",\"kernel_seconds\":${ks:-null},\"md5\":\"$sum\"}" | tee -a "$rows.jsonl"
}

# One variant's row in ROWS (variant_setup).
one() { variant_row "$ROWS" "$@" > /dev/null; }
