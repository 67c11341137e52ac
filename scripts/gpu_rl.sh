#!/usr/bin/env bash
# RL on a GPU machine (one H100 and 16 cores, torch 2.11.0+cu130 in its image, no Rust:
# ../shared/TOOLCHAIN.md), with the binary scripts/build_cuda.sh writes, carried there.
#  1. Throughput: two iterations of 4 episodes × 4 rollouts (8x8 cluster, 200-job windows),
#     16 rollout threads, the learner on the GPU and then on the CPU (curve.csv has the seconds).
#  2. Training: GAE with the critic, seeds 1-3, and the ablation without it (seed 1), side by
#     side (4 rollout threads each, the learners sharing the GPU), each stopped after the
#     iteration that passes $CODA_GPU_BUDGET seconds (default 300).
# Everything goes into one tar in $1 (default $OUT): curves, logs and weights.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${CODA_BIN:-target/cuda-bin/coda}
export LD_LIBRARY_PATH=${TORCH_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/torch/lib}
out=${1:-$OUT}
budget=${CODA_GPU_BUDGET:-300}
w=$(mktemp -d)
{ nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; } > "$w/machine.txt" 2>&1
cat "$w/machine.txt"
# A failed start (a missing library) costs seconds, not the lease.
if ! "$bin" train rl --help > /dev/null 2> "$w/start.err"; then
  cat "$w/start.err"; ldd "$bin" | grep 'not found'; exit 1
fi
tp=(--stages t:8x8:200:2:12 --validation 8x8:200:600 --episodes 4 --rollouts 4
    --validate-every 100 --checkpoint-every 0 --threads 16)
for d in cuda cpu; do
  mkdir -p "$w/tp-$d"
  "$bin" train rl "${tp[@]}" --device "$d" --run-dir "$w/tp-$d" --out "$w/tp-$d/p.safetensors" \
    2>&1 | tail -2 | tee "$w/tp-$d.log"
done
rl=(--stages alloc:4x8:100:10:1,joint-8x8:8x8:200:12:12,joint-16x8:16x8:400:8:12
    --episodes 4 --rollouts 4 --threads 4 --device cuda --time-budget "$budget"
    --checkpoint-every 0)
for run in gae-1:1:gae gae-2:2:gae gae-3:3:gae rollouts-1:1:rollouts; do
  IFS=: read -r name seed adv <<< "$run"
  mkdir -p "$w/$name"
  "$bin" train rl "${rl[@]}" --seed "$seed" --advantage "$adv" --run-dir "$w/$name" \
    --out "$w/$name/policy-rl.safetensors" > "$w/$name.log" 2>&1 &
done
wait
tail -n 2 "$w"/*.log
tar -cf "$out/gpu_rl.tar" -C "$w" .
