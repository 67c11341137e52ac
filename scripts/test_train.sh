#!/usr/bin/env bash
# The training side (the `train` feature, libtorch): installs libtorch (CPU) when missing, runs
# the tests that need it (tch and plain-Rust forward passes agree) and trains a small policy end
# to end on a few fresh labels, then scores it with `coda gap` from the libtorch-free build.
# Not part of scripts/test.sh: the default test command must not need libtorch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_train.sh
(
  . scripts/train_env.sh
  cargo test --release --locked --features train --test it learned
  cargo build --release --locked --features train
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train="${CODA_TRAIN_TARGET:-$(pwd)/target/train}/release/coda"
( . scripts/train_env.sh
  "$train" label --sizes 2x4,3x6 --rounds 4 --seed 5 --node-limit 200 --threads 1 --out "$tmp/l.jsonl"
  "$train" train imitation --labels "$tmp/l.jsonl" --epochs-level1 10 --epochs-level2 10 \
    --epochs-joint 5 --out "$tmp/p.safetensors" --run-dir "$tmp/run"
  # The co-location ablation's switch, and RL from that checkpoint: a short curriculum.
  "$train" train imitation --labels "$tmp/l.jsonl" --epochs-level1 2 --epochs-level2 2 \
    --epochs-joint 1 --drop-features coloc_coef,corunners --out "$tmp/drop.safetensors" \
    --run-dir "$tmp/run-drop"
  # Level 1's tier head on labels of rounds with tiers, added to that checkpoint; RL keeps it.
  "$train" label --sizes 2x4 --rounds 3 --seed 6 --node-limit 200 --threads 1 --tiers \
    --out "$tmp/t.jsonl"
  "$train" train tiers --labels "$tmp/t.jsonl" --base "$tmp/p.safetensors" \
    --out "$tmp/pt.safetensors" --run-dir "$tmp/run-t" --epochs 5 --validate-every 2
  "$train" train rl --start "$tmp/pt.safetensors" --out "$tmp/rl.safetensors" --run-dir "$tmp/rl" \
    --pool 120 --stages place:2x8:20:1:2,joint:2x8:20:2:12 --validation 2x8:20:60 \
    --episodes 1 --rollouts 2 --validate-every 1
  test "$(wc -l < "$tmp/rl/curve.csv")" -eq 4 )
. scripts/env.sh
cargo build --release --locked
target/release/coda gap --labels "$tmp/l.jsonl" --policy-weights "$tmp/p.safetensors" --out "$tmp/gap" \
  | grep -E '^\| all \| (learned|expert) '
# The RL weights kept the tier head: on rounds with tiers, gap scores it.
target/release/coda gap --labels "$tmp/t.jsonl" --policy-weights "$tmp/rl.safetensors" \
  --include-unproven --out "$tmp/gap-t" | grep -E '^\| all \| learned-tier-head\+tiers '
for w in rl drop; do
  run=$(target/release/coda simulate --trace philly --take 40 --cluster 2x8 --policy learned \
    --policy-weights "$tmp/$w.safetensors" --quiet --out "$tmp/sim-$w" --json)
  grep -q '"jobs_unfinished":0' <<< "$run"
done
