#!/usr/bin/env bash
# Reproduces the shipped learned policy from scratch: expert labels (the exact program on
# generated rounds and on rounds cut from the Philly, Alibaba and ITP cluster 02 replays),
# imitation training, one DAgger round (the Philly replay under the first policy, its states
# labelled by the program), and the final training. ITP cluster 06 and generated rounds of seed
# 1000 are never used: `coda gap` evaluates on them.
# Labels are node-limited (500 nodes) so that they repeat; the 20 s time limit is a guard.
# Writes everything to $CODA_TRAIN_OUT (default train-out/) and the model to
# models/policy.safetensors; step 5 adds level 1's CPU/memory tier head to it and to
# models/policy-rl.safetensors (`coda train rl` keeps the head of the file it starts from).
# Needs libtorch: scripts/setup_train.sh installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_train.sh
. scripts/train_env.sh
cargo build --release --locked --features train
coda="$CARGO_TARGET_DIR/release/coda"
out=${CODA_TRAIN_OUT:-train-out}
mkdir -p "$out"
limits=(--time-limit 20 --node-limit 500)
t0=$(date +%s)

echo "== 1. expert labels: generated rounds (2-8 servers), Philly, Alibaba and ITP 02 replay rounds"
$coda label --sizes 2x4,2x6,3x6,3x8,4x8,4x10 --rounds 25 --seed 1 "${limits[@]}" \
  --trace philly --trace-rounds 30 --out "$out/expert1.jsonl"
$coda label --sizes 2x4,2x6,3x6,3x8,4x8 --rounds 40 --seed 2 "${limits[@]}" --out "$out/expert2.jsonl"
$coda label --sizes 5x10,6x12 --rounds 15 --seed 3 "${limits[@]}" \
  --trace alibaba --trace-policy drf --trace-rounds 30 --trace-every 5 --out "$out/expert3.jsonl"
$coda label --rounds 0 "${limits[@]}" --trace itp-cluster02 --take 300 --cluster 8x8 \
  --trace-policy pollux --trace-rounds 40 --trace-every 5 --max-jobs 8 --out "$out/expert4.jsonl"
# Lightly loaded clusters (fewer jobs than servers), where the expert spreads and scales up.
$coda label --sizes 4x2,6x3,8x4,8x6 --rounds 25 --seed 5 "${limits[@]}" --out "$out/expert5.jsonl"
t1=$(date +%s)

echo "== 2. imitation training on them"
labels="$out/expert1.jsonl,$out/expert2.jsonl,$out/expert3.jsonl,$out/expert4.jsonl,$out/expert5.jsonl"
$coda train imitation --labels "$labels" --out "$out/round0.safetensors" --run-dir "$out/run0"
t2=$(date +%s)

echo "== 3. DAgger: the states the first policy visits on the Philly replay, labelled"
$coda label --rounds 0 "${limits[@]}" --trace philly --trace-policy learned \
  --policy-weights "$out/round0.safetensors" --trace-rounds 40 --trace-every 4 \
  --out "$out/dagger1.jsonl"
t3=$(date +%s)

echo "== 4. final training on every label"
$coda train imitation --labels "$labels,$out/dagger1.jsonl" --out models/policy.safetensors \
  --run-dir "$out/run1"
t4=$(date +%s)

echo "== 5. level 1's CPU/memory tier head: labels of rounds whose jobs offer tiers (3 cores per GPU)"
$coda label --sizes 2x4,3x6,3x8,4x8 --rounds 25 --seed 21 "${limits[@]}" --tiers \
  --out "$out/tiers1.jsonl"
$coda label --rounds 0 "${limits[@]}" --tiers --cpu-per-gpu 3 --trace philly --trace-rounds 30 \
  --out "$out/tiers2.jsonl"
$coda label --rounds 0 "${limits[@]}" --tiers --cpu-per-gpu 3 --trace itp-cluster02 --take 300 \
  --cluster 8x8 --trace-policy pollux --trace-rounds 30 --trace-every 5 --max-jobs 8 \
  --out "$out/tiers3.jsonl"
tiers="$out/tiers1.jsonl,$out/tiers2.jsonl,$out/tiers3.jsonl"
# The head is trained on the expert's allocations alone (teacher forcing), so it does not depend
# on the levels it joins: the same head goes into both shipped files.
for f in models/policy.safetensors models/policy-rl.safetensors; do
  $coda train tiers --labels "$tiers" --base "$f" --proven-only --epochs 200 --run-dir "$out/run-tiers"
done
t5=$(date +%s)
echo "labels $((t1 - t0)) s, training $((t2 - t1)) s, DAgger labels $((t3 - t2)) s, final training $((t4 - t3)) s, tier head $((t5 - t4)) s; total $((t5 - t0)) s"
