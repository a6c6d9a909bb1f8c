#!/usr/bin/env bash
# Downloads the Vulkan/EGL loader packages that a bare GPU machine (no desktop
# packages, e.g. the project's H200 device machine) lacks into .gl/ at the
# repository root (ignored by git), so a run there can unpack them with
# `for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig`.
# Run once from the repository: bash scripts/gl-loaders.sh (Debian/Ubuntu, amd64).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p .gl /tmp/vgpu-amd64-apt/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/vgpu-amd64-apt'
apt-get $o update >/dev/null
(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1)
ls .gl
