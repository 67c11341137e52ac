#!/usr/bin/env bash
# The fungible-vs-fixed effect across seeds (the trace's model assignment and every policy's
# random choices): seeds 1 and 2 of scripts/bench_cpu_mem.sh's replays (seed 0), for `srtf`,
# `synergy-tune` and `learned`. Writes benches/results/cpu_mem/seeds/<trace>-<servers>-<mode>-s<seed>/.
# About 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-benches/results/cpu_mem/seeds}
mkdir -p "$out"
for seed in 1 2; do
  for trace in philly itp-cluster06; do
    for servers in cpu3 own; do
      for mode in fixed fungible; do
        run="$out/$trace-$servers-$mode-s$seed"
        # shellcheck disable=SC2046 # the server options are words
        "$coda" compare --trace "$trace" $(servers_args "$servers") --cpu-mem "$mode" \
          --seed "$seed" --policies srtf,synergy-tune,learned --out "$run" > /dev/null
        rm -rf "${run:?}"/*/ "$run"/*.svg
        echo "$trace $servers $mode seed $seed done" >&2
      done
    done
  done
done
machine_txt "$out" "bash scripts/bench_cpu_mem_seeds.sh" \
  "compare's policies in parallel on both cores, beside other work (wall columns are of a shared machine)"
