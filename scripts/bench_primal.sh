#!/usr/bin/env bash
# The exact solver under a deadline: each round of 16-64 servers (`formulations/instances/large`:
# generated 16 x 32 and 64 x 128 rounds, seeds 1-2, and 32-server rounds cut from the Philly and
# ITP traces) and the 8-server trace rounds, solved for 60 s (LIMIT) from the best heuristic's
# schedule and from the learned policy's, beside the policy alone (`coda bench-warm-start
# --program auto`: the configuration program at these sizes). Writes the incumbent over time
# (incumbents.csv), the primal integral and the gap at 1/5/15/60 s (primal.csv) and the solves
# (warm_start.csv) to formulations/results/primal/, and with NO_INTERIM=1 the ablation without
# the masters between chunks of column generation to formulations/results/primal/no-interim/.
# THREADS: solver threads (default 1). About 12 minutes per run on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
limit=${LIMIT:-60}
threads=${THREADS:-1}
flags=()
out=formulations/results/primal
if [ "${NO_INTERIM:-0}" = 1 ]; then
  flags=(--no-interim-masters)
  out=$out/no-interim
fi
out=${1:-$out}
rounds=$(mktemp -d)
trap 'rm -rf "$rounds"' EXIT
for f in formulations/instances/large/*.json formulations/instances/trace_*.json; do
  ln -s "$PWD/$f" "$rounds/$(basename "$f")"
done
mkdir -p "$out"
"$coda" bench-warm-start --instances "$rounds" --program auto --time-limit "$limit" \
  --solver-threads "$threads" "${flags[@]}" --out "$out"
machine_txt "$out" \
  "bash scripts/bench_primal.sh (LIMIT=$limit, THREADS=$threads, NO_INTERIM=${NO_INTERIM:-0})"
