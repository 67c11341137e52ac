#!/usr/bin/env bash
# The lookahead distilled into the learned policy's networks (set-up included; needs libtorch,
# scripts/setup_train.sh installs it, and ~22 GB of memory for the 25,000-round trainings).
# Writes the students to benches/results/lookahead/distil-net/ (or $1):
#   six.safetensors    the shipped weights fine-tuned on the lookahead's decisions (its six
#                      default candidates) on the states `learned` visits on the training slices
#   three.safetensors  the same with the lookahead restricted to `learned`, `keep` and the greedy
#                      decoding (`--lookahead-candidates 3`)
#   six-dagger.safetensors  one DAgger round of `six`: its own states (every other round)
#                      labelled by the same lookahead (over the shipped weights), trained on with
#                      the first labels of seed 0
#   six-dagger-rl.safetensors  `six-dagger` refined by PPO (`coda train rl`, its default
#                      curriculum and critic, seed 1, on the CPU) on Philly jobs 0-1499 only
#                      (`--pool 1500`: none of the evaluation's Philly jobs), the weights kept
#                      by their greedy decoding on generic 8 x 8 clusters
#   six-dagger-rl-deployed.safetensors  the same PPO, the weights kept by the policy as
#                      deployed (best of eight decodings) on Philly windows on 4 x DGX-1
#   six-dagger-rl-judged.safetensors  PPO on 4 x DGX-1 windows (the curriculum's sizes),
#                      kept as `six-dagger-rl-deployed`
#   six-dagger-rl-l1.safetensors  level 1 alone on 4 x DGX-1 windows at learning rate 1e-4,
#                      kept as `six-dagger-rl-deployed`
# Training slices are the gate's (scripts/distil_gate.sh): ITP cluster 02 jobs 0-299 and
# 1000-1299 on 8 x ND40rs-v2, Philly jobs 500-899 and 1000-1399 on 4 x DGX-1, seeds 0-2;
# validation: ITP cluster 02 jobs 1500-1799 and Philly 4000-4399 (seed 0). Never the
# evaluation's ITP cluster 06, Philly 1500-3399 or ITP cluster 02 2000-3299
# (scripts/bench_distil_net.sh). Labels go to $CODA_TRAIN_OUT (default train-out/distil-net).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_train.sh
. scripts/train_env.sh
cargo build --release --locked --features train
coda="$CARGO_TARGET_DIR/release/coda"
out=${1:-benches/results/lookahead/distil-net}
work=${CODA_TRAIN_OUT:-train-out/distil-net}
mkdir -p "$out" "$work"
train_slices="itp-cluster02:8xnd40rs-v2:0:300 itp-cluster02:8xnd40rs-v2:1000:300 philly:4xdgx-1-v100:500:400 philly:4xdgx-1-v100:1000:400"
val_slices="itp-cluster02:8xnd40rs-v2:1500:300 philly:4xdgx-1-v100:4000:400"
# labels DIR SEEDS FLAGS...: the lookahead's labels of every training slice under SEEDS and of
# the validation slices (seed 0), appended to DIR/train-*.jsonl and DIR/val-*.jsonl.
labels() {
  local dir=$1 seeds=$2
  shift 2
  mkdir -p "$dir"
  for set in train val; do
    local slices=$train_slices s=$seeds
    [ "$set" = val ] && slices=$val_slices s=0
    for sl in $slices; do
      IFS=: read -r trace cluster skip take <<< "$sl"
      for seed in $s; do
        $coda distil labels --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
          --seed "$seed" --skip-unplaceable "$@" --out "$dir/$set-$trace-$skip-s$seed.jsonl"
      done
    done
  done
}
files() { ls "$@" | paste -sd, -; }
# fine-tune OUT.safetensors DIR... : the shipped weights trained on the train files of DIRs,
# validated on the last DIR's val files.
fine_tune() {
  local name=$1 train="" last
  shift
  for d in "$@"; do train="${train:+$train,}$(files "$d"/train-*.jsonl)"; last=$d; done
  $coda train imitation --labels "$train" --validation-labels "$(files "$last"/val-*.jsonl)" \
    --init models/policy.safetensors --epochs-level1 "${EPOCHS1:-20}" --epochs-level2 "${EPOCHS2:-20}" \
    --epochs-joint "${EPOCHS3:-10}" --device cpu --out "$out/$name.safetensors" --run-dir "$work/run-$name"
  cp "$work/run-$name/curve.csv" "$out/curve-$name.csv"
}
t0=$(date +%s)
labels "$work/six" "0 1 2"
labels "$work/three" "0 1 2" --lookahead-candidates 3
fine_tune six "$work/six"
EPOCHS1=10 EPOCHS2=10 EPOCHS3=5 fine_tune three "$work/three"
# DAgger: the states `six` visits (every other round), labelled by the lookahead over the
# shipped weights; trained with the first round's labels of seed 0 (memory).
labels "$work/six-dagger" "0 1 2" --policy-weights "$out/six.safetensors" \
  --expert-weights models/policy.safetensors --every 2
mkdir -p "$work/six-s0"
cp "$work"/six/train-*-s0.jsonl "$work/six-s0/"
fine_tune six-dagger "$work/six-s0" "$work/six-dagger"
# PPO from `six-dagger` on Philly jobs the evaluation never replays (seed 1: the first two runs
# make the same iterates), validated by the greedy decoding on generic 8 x 8 clusters (how RL
# validated before), then as the policy is deployed (best of eight decodings a round) on the
# judged 4 x DGX-1.
rl() {
  local name=$1
  shift
  mkdir -p "$work/run-$name"
  $coda train rl --start "$out/six-dagger.safetensors" --out "$out/$name.safetensors" \
    --run-dir "$work/run-$name" --trace philly --pool 1500 --seed 1 --device cpu \
    --time-budget 900 --checkpoint-every 0 "$@"
  cp "$work/run-$name/curve.csv" "$out/curve-$name.csv"
}
rl six-dagger-rl --validation 8x8:200:600,8x8:200:1100 --validation-decoding greedy
rl six-dagger-rl-deployed --validation 4xdgx-1-v100:400:600,4xdgx-1-v100:400:1100
# The same curriculum's windows on the judged cluster instead of generic servers.
rl six-dagger-rl-judged --validation 4xdgx-1-v100:400:600,4xdgx-1-v100:400:1100 \
  --stages place:4xdgx-1-v100:100:10:2,alloc:4xdgx-1-v100:100:15:1,joint-200:4xdgx-1-v100:200:15:12,joint-400:4xdgx-1-v100:400:10:12
# Level 1 alone, a third of the learning rate, on 4 x DGX-1 (the 900-s budget ends it).
rl six-dagger-rl-l1 --validation 4xdgx-1-v100:400:600,4xdgx-1-v100:400:1100 \
  --stages alloc-200:4xdgx-1-v100:200:25:1,alloc-400:4xdgx-1-v100:400:15:1 --learning-rate 1e-4
echo "distil_net: $(( $(date +%s) - t0 )) s"
