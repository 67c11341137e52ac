#!/usr/bin/env bash
# The configuration program's pricing against its ablations (`coda solve --program config
# --time-limit L --threads 1 --json`): as shipped (by shapes, co-location floors, dual smoothing),
# `--no-dual-smoothing`, `--no-colocation-floors`, and over fragments as before all three
# (`--no-shape-pricing --no-dual-smoothing`) on the rounds pricing decides: the generated rounds
# of 5 to 8 servers, the two trace rounds, the 16 x 32 round and the 32-server trace rounds
# (L = 60 s, LIMIT), the 64 x 128 round (L = 300 s, LIMIT_64; SKIP_64=1 leaves it out). Two
# variants of a round run at once, one per core. Writes
# formulations/results/pricing/solve_pricing.csv and machine.txt. About 20 minutes on 2 cores.
# ONLY="a b": those rounds alone (by name), into solve_pricing.csv all the same.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-formulations/results/pricing}
limit=${LIMIT:-60}
limit64=${LIMIT_64:-300}
mkdir -p "$out"
tmp=$(mktemp -d)
echo "instance,pricing,status,objective,best_bound,gap,wall_s,iterations,columns,search_nodes,converged,generation_s" > "$tmp/all.csv"
for f in formulations/instances/gen_s0[5-8]_*.json formulations/instances/trace_*.json \
  formulations/instances/large/gen_s16_j32_seed1.json formulations/instances/large/trace_*.json \
  formulations/instances/large/gen_s64_j128_seed1.json; do
  name=$(basename "$f" .json)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  l=$limit
  case "$name" in gen_s64_*) l=$limit64; [ "${SKIP_64:-0}" = 1 ] && continue ;; esac
  run() { "$coda" solve --instance "$f" --program config --time-limit "$l" --threads 1 --json "$@"; }
  run > "$tmp/shapes.json" &
  run --no-dual-smoothing > "$tmp/no-smoothing.json"
  wait
  run --no-colocation-floors > "$tmp/no-floors.json" &
  run --no-shape-pricing --no-dual-smoothing > "$tmp/fragments.json"
  wait
  for p in shapes no-smoothing no-floors fragments; do
    solve_row "$name" "$p" < "$tmp/$p.json" >> "$tmp/all.csv"
    tail -1 "$tmp/all.csv" >&2
  done
done
mv "$tmp/all.csv" "$out/solve_pricing.csv"
rm -rf "$tmp"
machine_txt "$out" "bash scripts/bench_pricing.sh (LIMIT=$limit, LIMIT_64=$limit64, SKIP_64=${SKIP_64:-0})" \
  "shapes with no-smoothing, then no-floors with fragments, each pair at once, one per core (1 HiGHS thread each)"
