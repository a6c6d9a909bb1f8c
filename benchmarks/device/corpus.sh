#!/usr/bin/env bash
# The repository's PTX cases and both corpora (cuda-samples, cub) on the GPU
# through `vgpu ptx run DIR --backend gpu`, checked and unchecked: one line
# per run ("DIR MODE: <the run's last line>", e.g. "50 cases: all pass")
# appended to $OUT/corpus.txt and printed. VGPU: the binary (default the
# release build); CORPUS_TIMEOUT: seconds per run (default 100). Run through
# the device tool from the repository root (benchmarks/device/env.sh).
set -uo pipefail
source benchmarks/device/env.sh
VGPU=${VGPU:-./target/release/vgpu}
for c in ptx-cases ptx-cases/corpus/cuda-samples ptx-cases/corpus/cub; do
  for m in "" --unchecked; do
    timeout "${CORPUS_TIMEOUT:-100}" "$VGPU" ptx run "$c" --backend gpu $m --out-dir "$OUT/corpus-out" > "$OUT/corpus-run.txt" 2>&1
    echo "$c ${m:-checked}: $(tail -1 "$OUT/corpus-run.txt")" | tee -a "$OUT/corpus.txt"
  done
done
rm -rf "$OUT/corpus-out" "$OUT/corpus-run.txt"
