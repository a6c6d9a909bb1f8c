#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test VGPU:
#  - lavapipe (mesa-vulkan-drivers): a real Vulkan device on the CPU, so the wgpu
#    code paths are tested for real without a GPU;
#  - Python packages for the Python package and the reference benchmarks;
#  - rustfmt and clippy (the test command's gates) where rustup lacks them.
# Idempotent: skips what is already there. Needs root (or sudo) for apt.
set -euo pipefail

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
  echo "install-deps: installing mesa-vulkan-drivers (lavapipe) and the Vulkan loader"
  sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

# The `mpi` feature (issue 14): OpenMPI (mpicc, mpirun) and libclang for
# rsmpi's generated bindings; scripts/test.sh runs the MPI tests with them.
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1 \
   || ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; then
  echo "install-deps: installing libopenmpi-dev openmpi-bin libclang-dev (the mpi feature)"
  sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq libopenmpi-dev openmpi-bin libclang-dev >/dev/null
fi

# The format and lint gates of scripts/test.sh.
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    comp=$([ "$tool" = fmt ] && echo rustfmt || echo clippy)
    echo "install-deps: rustup component add $comp"
    rustup component add "$comp"
  fi
done

py=${PYTHON:-python3}
need=()
for mod in numpy pytest maturin; do
  "$py" -c "import $mod" 2>/dev/null || need+=("$mod")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: pip install ${need[*]}"
  "$py" -m pip install -q "${need[@]}"
fi

# mpi4py for the Python package's `comm=` test (python/tests/test_shard.py
# runs it under mpirun -n 2; it skips only where mpi4py is not importable).
# Debian's python3-mpi4py serves /usr/bin/python3 only, so pip builds it for
# $PYTHON against the OpenMPI installed above.
if ! "$py" -c "import mpi4py" 2>/dev/null; then
  echo "install-deps: pip install mpi4py (VGPU().ensemble(comm=) test)"
  "$py" -m pip install -q mpi4py || \
    echo "install-deps: mpi4py not installed; the comm= test under mpirun will skip" >&2
fi
