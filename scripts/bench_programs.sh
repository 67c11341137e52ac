#!/usr/bin/env bash
# The compact and the configuration program side by side on every shipped round
# (`formulations/instances`, then the 16 × 32 and 64 × 128 rounds of `formulations/instances/large`):
# `coda solve --program P --time-limit L --threads 1 --json`, each from the same starts (the
# running jobs kept, the best heuristic's schedule); L is 60 s (LIMIT), 300 s for 64 servers
# (LIMIT_64). Writes formulations/results/programs/solve_programs.csv and machine.txt. About
# 45 minutes on 2 cores. TIERS=1: every job offers its model's CPU/memory tiers (`--tiers`);
# SKIP_64=1: without the 64-server round.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-formulations/results/programs}
limit=${LIMIT:-60}
limit64=${LIMIT_64:-300}
tiers=()
[ "${TIERS:-0}" = 1 ] && tiers=(--tiers)
mkdir -p "$out"
tmp=$(mktemp)
echo "instance,program,status,objective,best_bound,gap,wall_s,nodes,columns,iterations,converged,generation_s" > "$tmp"
for f in formulations/instances/*.json formulations/instances/large/*seed1.json; do
  name=$(basename "$f" .json)
  l=$limit
  case "$name" in gen_s64_*) l=$limit64; [ "${SKIP_64:-0}" = 1 ] && continue ;; esac
  for p in compact config; do
    "$coda" solve --instance "$f" --program "$p" --time-limit "$l" --threads 1 "${tiers[@]}" --json | python3 -c "
import json,sys
d=json.load(sys.stdin); c=d.get('columns') or {}
print(','.join(str(x) for x in ['$name','$p',d['status'],d['objective'],d['best_bound'],d['gap'],d['wall_time_s'],d.get('nodes') if d.get('nodes') is not None else '',c.get('columns',''),c.get('iterations',''),c.get('converged',''),c.get('generation_s','')]))" >> "$tmp"
    tail -1 "$tmp" >&2
  done
done
mv "$tmp" "$out/solve_programs.csv"
machine_txt "$out" \
  "bash scripts/bench_programs.sh (LIMIT=$limit, LIMIT_64=$limit64, TIERS=${TIERS:-0}, SKIP_64=${SKIP_64:-0})"
