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
