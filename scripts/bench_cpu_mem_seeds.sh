#!/usr/bin/env bash
# The fungible-vs-fixed effect across seeds (the trace's model assignment and every policy's
# random choices): seeds 1 and 2 of scripts/bench_cpu_mem.sh's replays (seed 0), for `srtf`,
# `synergy-tune` and `learned`. Writes benches/results/cpu_mem/seeds/<trace>-<servers>-<mode>-s<seed>/.
# About 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-target/release/coda}
out=${1:-benches/results/cpu_mem/seeds}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD)
for seed in 1 2; do
  for trace in philly itp-cluster06; do
    for servers in cpu3 own; do
      extra=()
      [ "$servers" = cpu3 ] && extra=(--cpu-per-gpu 3)
      for mode in fixed fungible; do
        "$coda" compare --trace "$trace" "${extra[@]}" --cpu-mem "$mode" --seed "$seed" \
          --policies srtf,synergy-tune,learned --out "$out/$trace-$servers-$mode-s$seed" > /dev/null
        rm -rf "${out:?}/$trace-$servers-$mode-s$seed"/*/ "$out/$trace-$servers-$mode-s$seed"/*.svg
        echo "$trace $servers $mode seed $seed done" >&2
      done
    done
  done
done
{ echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $commit"
  echo "command: bash scripts/bench_cpu_mem_seeds.sh"
  echo "runs: compare's policies in parallel on both cores, beside other work (wall columns are of a shared machine)"
} > "$out/machine.txt"
