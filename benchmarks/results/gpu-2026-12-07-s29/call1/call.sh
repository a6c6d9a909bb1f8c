export OUT
source benchmarks/device/env.sh
gunzip -c target/vgpu-fin.gz > /tmp/vgpu-fin; chmod +x /tmp/vgpu-fin
nvidia-smi -L > $OUT/gpu.txt 2>&1; nvidia-smi --query-gpu=driver_version --format=csv,noheader >> $OUT/gpu.txt
cat $OUT/gpu.txt
VGPU=/tmp/vgpu-fin OUT=$OUT/fin timeout 120 bash benchmarks/device/ptx_gpu.sh > $OUT/fin.log 2>&1
echo "== fin"; cat $OUT/fin/ptx_gpu.jsonl
VGPU=/tmp/vgpu-fin OUT=$OUT/vfin MASK_SPECS="reduce_sum_atomic:checked matmul_tiled:checked lorenz_rk4:unchecked" MASK_ONLY="same bare nochk" timeout 150 bash benchmarks/device/mask_variants.sh > $OUT/vfin.out 2>&1
echo "== variants fin"; cat $OUT/vfin/mask.jsonl
for c in ptx-cases ptx-cases/corpus/cuda-samples ptx-cases/corpus/cub; do
  timeout 20 /tmp/vgpu-fin ptx run $c --backend gpu --out-dir /tmp/co > /tmp/co.txt 2>&1
  echo "$c: $(tail -1 /tmp/co.txt)" | tee -a $OUT/corpus.txt
  grep -E "FAIL|ERROR|differ" /tmp/co.txt | head -5 | tee -a $OUT/corpus.txt
done
