#!/usr/bin/env bash
# Builds the training binary for a GPU machine whose image has torch 2.11.0+cu130 (no Rust, no
# network; ../shared/TOOLCHAIN.md): tch 0.24 pairs with libtorch 2.11.0, so a copy of the tree
# is built with tch pinned to 0.24.0 (the repository keeps 0.26) against the PyPI torch 2.11.0
# wheel, linked so that libtorch_cuda stays needed (tch-rs #980), and stripped. Writes
# target/cuda-bin/coda (~11 MB): carry it and run it there with
# LD_LIBRARY_PATH=<image torch>/lib. It does not start where the CUDA libraries are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
venv="${CODA_CUDA_VENV:-$(pwd)/.venv-cuda}"
if [ ! -d "$venv/lib" ] || ! compgen -G "$venv/lib/python3*/site-packages/torch/lib/libtorch_cuda.so" > /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'cuda-toolkit[cudart,cupti]==13.0.2'
  "$venv/bin/pip" install -q --no-deps torch==2.11.0
fi
site=$(ls -d "$venv"/lib/python3*/site-packages)
src=target/cuda-src
# The tree as it is (tracked and untracked files, uncommitted changes included), without build
# outputs; the copy's Cargo.lock is kept between builds (tch pinned once).
mkdir -p "$src"
git ls-files -z -co --exclude-standard | grep -zv '^Cargo.lock$' | tar -cf - --null -T - | tar -xf - -C "$src"
[ -f "$src/Cargo.lock" ] || cp Cargo.lock "$src/"
(
  cd "$src"
  sed -i 's/^tch = { version = "0.26"/tch = { version = "0.24"/' Cargo.toml
  cargo update -q -p tch --precise 0.24.0
  LIBTORCH="$site/torch" CARGO_TARGET_DIR="$(pwd)/../cuda" \
    cargo rustc --release --features train --bin coda -- \
    -C link-arg=-Wl,--no-as-needed -C link-arg=-ltorch_cuda -C link-arg=-ltorch
)
readelf -d target/cuda/release/coda | grep -q 'libtorch_cuda.so' \
  || { echo "build_cuda: libtorch_cuda.so is not needed by the binary" >&2; exit 1; }
mkdir -p target/cuda-bin
strip -o target/cuda-bin/coda target/cuda/release/coda
ls -l target/cuda-bin/coda
