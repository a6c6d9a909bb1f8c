#!/usr/bin/env bash
# Builds VGPU's Python package (python/, PyO3 + maturin) and runs its pytest suite.
#
# On a clean machine: needs numpy, pytest and maturin for $PYTHON (default python3),
# which scripts/install-deps.sh installs. Builds the abi3 wheel with maturin (dev
# profile, sharing target/ with cargo), installs it into a private virtual
# environment (target/python-venv, which sees the base interpreter's numpy and
# pytest), and runs python/tests with that environment's interpreter.
# Set VGPU_PY_RELEASE=1 to build the wheel in release mode instead.
set -euo pipefail
cd "$(dirname "$0")/.."

py=${PYTHON:-python3}
venv=target/python-venv
wheels=target/python-wheels

for mod in numpy pytest maturin; do
  if ! "$py" -c "import $mod" 2>/dev/null; then
    echo "python-test: $py lacks the '$mod' package; run scripts/install-deps.sh" >&2
    exit 1
  fi
done

profile=()
[ "${VGPU_PY_RELEASE:-0}" = 1 ] && profile=(--release)

echo "== maturin build ${profile[*]:-(dev profile)}"
rm -rf "$wheels"
"$py" -m maturin build -m python/Cargo.toml -i "$py" --out "$wheels" "${profile[@]}"

if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv"
fi
wheel=$(ls "$wheels"/vgpu-*.whl)
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps --disable-pip-version-check "$wheel"

echo "== pytest python/tests"
# Run from the repository root so that the source folder python/vgpu (which has no
# compiled extension) is not on sys.path: the installed wheel is what is tested.
"$venv/bin/python" -m pytest python/tests -q "$@"
