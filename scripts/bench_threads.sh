#!/usr/bin/env bash
# Solver threads on the largest shipped rounds: the configuration program (`coda solve --program
# config --time-limit L --threads T --json`; HiGHS on T threads, the server classes priced on T)
# at each thread count of THREADS (default "1 2"; capped at the cores) on the 8-server rounds it
# proves or bounds (gen_s08_j16_seed1, the two trace rounds), the 16 x 32 and 64 x 128 rounds
# (seed 1) and the 32-server trace rounds. L = 60 s (LIMIT). Writes
# formulations/results/threads/solve_threads.csv and machine.txt. About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-formulations/results/threads}
limit=${LIMIT:-60}
threads=${THREADS:-1 2}
mkdir -p "$out"
tmp=$(mktemp)
echo "instance,threads,status,objective,best_bound,gap,wall_s,iterations,columns,search_nodes,converged,generation_s" > "$tmp"
for f in formulations/instances/gen_s08_j16_seed1.json formulations/instances/trace_*.json \
  formulations/instances/large/gen_s16_j32_seed1.json formulations/instances/large/gen_s64_j128_seed1.json \
  formulations/instances/large/trace_*.json; do
  name=$(basename "$f" .json)
  for t in $threads; do
    "$coda" solve --instance "$f" --program config --time-limit "$limit" --threads "$t" --json \
      | solve_row "$name" "$t" >> "$tmp"
    tail -1 "$tmp" >&2
  done
done
mv "$tmp" "$out/solve_threads.csv"
machine_txt "$out" "bash scripts/bench_threads.sh (LIMIT=$limit, THREADS=$threads)" \
  "alone on the machine; 2 threads is all its 2 cores"
