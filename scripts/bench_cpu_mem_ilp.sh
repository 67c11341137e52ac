#!/usr/bin/env bash
# The `ilp` policy with CPU/memory tiers in its program: a Philly slice small enough for it (150
# jobs on 4 x 8 GPUs, 3 cores per GPU; windows, limits as benches/results/sim/philly150-4x8-ilp),
# fixed and fungible, beside `srtf`, `synergy-tune` and `learned`; then fungible with the estimate
# `cpu_mem_transfer` at 0.5 and 0. Writes benches/results/cpu_mem/ilp/philly150-4x8-cpu3-<run>/
# and machine.txt. About 30 minutes on 2 cores (two runs at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-benches/results/cpu_mem/ilp}
mkdir -p "$out"
slice() { # RUN [compare options...]
  local run="$out/philly150-4x8-cpu3-$1"
  shift
  "$coda" compare --trace philly --take 150 --cluster 4x8 --cpu-per-gpu 3 "$@" \
    --policies srtf,synergy-tune,learned,ilp --ilp-time-limit 30 --ilp-node-limit 100 \
    --ilp-max-jobs 10 --out "$run" > /dev/null
  rm -rf "${run:?}"/*/ "$run/utilization.svg"
}
slice fixed --cpu-mem fixed &
slice fungible --cpu-mem fungible &
wait
half=$(params_with_transfer 0.5)
none=$(params_with_transfer 0)
slice fungible-transfer0.5 --cpu-mem fungible --params "$half" &
slice fungible-transfer0 --cpu-mem fungible --params "$none" &
wait
rm -f "$half" "$none"
machine_txt "$out" "bash scripts/bench_cpu_mem_ilp.sh" \
  "two runs at a time, each compare's policies in parallel, beside other work (wall columns are of a shared machine)"
