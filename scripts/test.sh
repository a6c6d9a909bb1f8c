#!/usr/bin/env bash
# Runs every VGPU test: the format and lint gates (rustfmt, clippy with warnings as
# errors), the Rust workspace (unit, integration, doc and CLI tests, GPU tests on
# lavapipe when no GPU is present) and the Python package's pytest suite.
# Installs what a fresh machine lacks first (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test --workspace"
cargo test --workspace --all-targets
cargo test --workspace --doc

# The mpi feature (issue 14): the vgpu binary with rsmpi, and mpirun -n 2 and
# -n 3 (oversubscribed on a small machine) writing the bytes of one process.
echo "== vgpu --features mpi (mpirun -n 2, -n 3)"
cargo clippy -p vgpu --features mpi --all-targets -- -D warnings
cargo test -p vgpu --features mpi --test cli_mpi

# Bounded fuzzing (docs/FUZZING.md), in the dev profile, whose build the tests
# above already made (a release build would recompile wgpu and naga). Exits
# non-zero on a new finding; the ones listed in crates/vgpu-fuzz/known/ do not
# fail it.
# A fixed count of inputs (the same inputs on every machine, seed 1), at most
# 30 s per target: a finding beyond them is for the long runs of docs/FUZZING.md,
# not a red CI on a faster machine.
echo "== vgpu-fuzz (2000 inputs per target)"
for target in field ptx case-json npy; do
  cargo run -q -p vgpu-fuzz -- run --target "$target" --iterations 2000 --seconds 30
done

if [ -f python/pyproject.toml ]; then
  echo "== python package (maturin build + pytest)"
  bash scripts/python-test.sh
fi
