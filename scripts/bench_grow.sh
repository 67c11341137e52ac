#!/usr/bin/env bash
# The learned policy's local search (`--policy-grow N`: N moves on the objective ending each
# round) on the load sweep's traces and clusters, against the same policy without it (the load
# sweep's `learned` rows, scripts/bench_load.sh). Writes benches/results/grow/<goodput>/<trace>-
# <cluster>/comparison.csv (the learned row, run with the search) and grow.csv / grow.md (both
# sweeps side by side; scripts/grow_table.py). GROW=8, GOODPUT="off on", SWEEP as bench_load.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
grow=${GROW:-8}
. scripts/bench_lib.sh
configs=${SWEEP:-$LOAD_CONFIGS}
out=benches/results/grow
mkdir -p "$out"
for goodput in ${GOODPUT:-off on}; do
  mkdir -p "$out/$goodput"
  machine_txt "$out/$goodput" "scripts/bench_grow.sh (configs: $configs; --goodput $goodput; --policy-grow $grow)" \
    "one replay at a time (--threads 1); the rows without the search are the load sweep's (its machine.txt)"
  for c in $configs; do
    trace=${c%%:*}; cluster=${c#*:}; name="$trace-$cluster"
    $coda compare --goodput "$goodput" --trace "$trace" --cluster "$cluster" --skip-unplaceable \
      --policies learned --policy-grow "$grow" --threads 1 --quiet --out "$out/$goodput/$name" > /dev/null
    rm -rf "${out:?}/$goodput/$name"/*/
  done
done
python3 scripts/grow_table.py "$out"
