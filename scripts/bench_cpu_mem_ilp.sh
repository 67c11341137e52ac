#!/usr/bin/env bash
# The `ilp` policy with CPU/memory tiers in its program: a Philly slice small enough for it (150
# jobs on 4 x 8 GPUs, 3 cores per GPU; windows, limits as benches/results/sim/philly150-4x8-ilp),
# fixed and fungible, beside `srtf`, `synergy-tune` and `learned`. Writes
# benches/results/cpu_mem/ilp/philly150-4x8-cpu3-<mode>/ and machine.txt. About 15 minutes on
# 2 cores (the two modes in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-target/release/coda}
out=${1:-benches/results/cpu_mem/ilp}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD)
for mode in fixed fungible; do
  "$coda" compare --trace philly --take 150 --cluster 4x8 --cpu-per-gpu 3 --cpu-mem "$mode" \
    --policies srtf,synergy-tune,learned,ilp --ilp-time-limit 30 --ilp-node-limit 100 \
    --ilp-max-jobs 10 --out "$out/philly150-4x8-cpu3-$mode" > /dev/null &
done
wait
for mode in fixed fungible; do
  rm -rf "${out:?}/philly150-4x8-cpu3-$mode"/*/ "$out/philly150-4x8-cpu3-$mode/utilization.svg"
done
{ echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $commit"
  echo "command: bash scripts/bench_cpu_mem_ilp.sh"
  echo "runs: the two modes in parallel, each compare's policies in parallel, beside other work (wall columns are of a shared machine)"
} > "$out/machine.txt"
