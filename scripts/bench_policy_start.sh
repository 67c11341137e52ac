#!/usr/bin/env bash
# The configuration program from its default starts and from the learned policy's schedule
# (`coda solve --program config --warm-start policy`: the policy's columns seed column
# generation and its schedule is the master's start) on every generated shipped round
# (`formulations/instances/gen_*`), 60 s each (LIMIT), 1 thread. Records the time and the
# pricing work (search nodes, repeatable) to the end of each solve. Writes
# formulations/results/policy_start/policy_start.csv and machine.txt. About 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-target/release/coda}
out=${1:-formulations/results/policy_start}
limit=${LIMIT:-60}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD)
tmp=$(mktemp)
echo "instance,start,status,objective,best_bound,gap,wall_s,search_nodes,columns,iterations" > "$tmp"
for f in formulations/instances/gen_*.json; do
  name=$(basename "$f" .json)
  for start in default policy; do
    extra=()
    [ "$start" = policy ] && extra=(--warm-start policy)
    "$coda" solve --instance "$f" --program config --time-limit "$limit" --threads 1 "${extra[@]}" --json | python3 -c "
import json,sys
d=json.load(sys.stdin); c=d.get('columns') or {}
print(','.join(str(x) for x in ['$name','$start',d['status'],d['objective'],d['best_bound'],d['gap'],d['wall_time_s'],c.get('search_nodes',''),c.get('columns',''),c.get('iterations','')]))" >> "$tmp"
    tail -1 "$tmp" >&2
  done
done
mv "$tmp" "$out/policy_start.csv"
{ echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $commit"
  echo "command: bash scripts/bench_policy_start.sh (LIMIT=$limit)"
} > "$out/machine.txt"
