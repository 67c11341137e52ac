#!/usr/bin/env bash
# Per-round quality of the RL runs scripts/gpu_rl.sh trained (weights in
# benches/results/rl_gae/weights/, written by scripts/bench_rl_gpu.sh) next to their imitation
# start and the best heuristic: the gap to the exact program on the held-out rounds (2-8
# servers, proven optima) and on the large rounds (16 and 64 servers, certified bounds), and the
# size ladder's objective (4 to 1,000 servers, `coda bench-decide`, the learned policy's sampled
# decoding). RL optimises job completion time over an episode, not a round's objective: this
# shows what it costs or gains per round. Writes benches/results/rl_gae/rounds/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
. scripts/bench_lib.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
res=benches/results/rl_gae
out=$res/rounds
mkdir -p "$out"
machine_txt "$out" "scripts/bench_rl_gpu_rounds.sh" "one core at a time, beside other work"
for w in start ${CODA_RUNS:-gae-2 gae-3 rollouts-3}; do
  weights=models/policy.safetensors
  [ "$w" = start ] || weights=$res/weights/$w.safetensors
  $coda gap --labels benches/results/gap/held_out.jsonl --policy-weights "$weights" \
    --out "$out/gap-$w" > /dev/null
  $coda gap --labels benches/results/gap/large/labels.jsonl --include-unproven \
    --policy-weights "$weights" --out "$out/large-$w" > /dev/null
  $coda bench-decide --policies learned,best-heuristic --repeats 1 --policy-weights "$weights" \
    --out "$out/ladder-$w.csv" > /dev/null
  # Only the tables: the per-round label copies are the inputs'.
  rm -f "$out"/gap-"$w"/*.jsonl "$out"/large-"$w"/*.jsonl
done
