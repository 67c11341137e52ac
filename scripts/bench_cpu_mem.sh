#!/usr/bin/env bash
# Fungible CPU and memory, side by side with fixed demands: the Philly window and ITP cluster 06,
# on servers of 3 cores per GPU (Synergy's testbed) and on the traces' own servers, each with
# `--cpu-mem fixed` and `--cpu-mem fungible`, every baseline, `synergy-tune`, `learned` and
# `learned-rl`; then the sensitivity of the 3-cores-per-GPU runs to the one new estimate
# (`cpu_mem_transfer`, 0.5 and 0). Writes benches/results/cpu_mem/<trace>-<servers>-<mode>/ and
# machine.txt. About 40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-target/release/coda}
out=${1:-benches/results/cpu_mem}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD)
all=fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random,synergy-tune,learned,learned-rl
for trace in philly itp-cluster06; do
  for servers in cpu3 own; do
    extra=()
    [ "$servers" = cpu3 ] && extra=(--cpu-per-gpu 3)
    for mode in fixed fungible; do
      "$coda" compare --trace "$trace" "${extra[@]}" --cpu-mem "$mode" --policies "$all" \
        --out "$out/$trace-$servers-$mode" > /dev/null
      echo "$trace $servers $mode done" >&2
    done
  done
done
# Sensitivity: the share of Synergy's measured speed-ups that carries over (shipped 1).
for t in 0.5 0; do
  params=$(mktemp)
  python3 - "$t" "$params" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"]["cpu_mem_transfer"] = float(sys.argv[1])
json.dump(p, open(sys.argv[2], "w"))
PY
  for trace in philly itp-cluster06; do
    "$coda" compare --trace "$trace" --cpu-per-gpu 3 --cpu-mem fungible --params "$params" \
      --policies pollux,synergy-tune,learned,learned-rl \
      --out "$out/$trace-cpu3-fungible-transfer$t" > /dev/null
    echo "$trace transfer $t done" >&2
  done
  rm -f "$params"
done
{ echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $commit"
  echo "command: bash scripts/bench_cpu_mem.sh"
  echo "runs: compare's policies in parallel on both cores, beside other work (wall columns are of a shared machine)"
} > "$out/machine.txt"
