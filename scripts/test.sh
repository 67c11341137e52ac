#!/usr/bin/env bash
# Set-up included: installs what is missing, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo test --release --locked
# The library must build without the command line's crates (the `cli` feature).
cargo check --release --locked --no-default-features --lib
