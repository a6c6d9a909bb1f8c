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
  mkdir -p "$w/o"
  env "${env[@]}" timeout 120 "${VGPU:-./target/release/vgpu}" ptx run ptx-cases/kernels.ptx \
    --entry "$entry" --grid "$grid" --block "$block" --backend gpu --kernel-time 5 \
    --out-dir "$w/o" "${a[@]}" 2>&1
}
