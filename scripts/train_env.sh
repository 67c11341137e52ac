# Sourced by the training scripts: the build venv (cmake, libclang), libtorch from
# scripts/setup_train.sh, and a target folder of its own — building with and without `tch` in
# one folder flips features of shared crates and rebuilds HiGHS at every switch.
. scripts/env.sh
venv="${CODA_TRAIN_VENV:-$(pwd)/.venv-train}"
# shellcheck disable=SC1091
. "$venv/env.sh"
export CARGO_TARGET_DIR="${CODA_TRAIN_TARGET:-$(pwd)/target/train}"
