#!/usr/bin/env bash
# Load sweep (set-up included): each shipped trace at its own cluster and on fewer servers of the
# same kind (the same jobs at the same arrival times on less capacity: higher load, more
# queueing), every baseline but `random`, `learned` and `learned-rl`, and the lower bound of
# `coda bound` on each. Writes one comparison folder per (trace, cluster) under
# benches/results/load/ (or $1), then `load_sweep.{csv,md}` (per trace and load: the bound, the
# best baseline, learned, learned-rl, and the share of average JCT above the bound each leaves).
# Alibaba runs at its own cluster only (its nodes are heterogeneous: fewer of "the same" is not
# one spec). One replay at a time (single-core wall times). SWEEP limits it to some configs
# (e.g. SWEEP="philly:16xdgx-1-v100"); BOUND_ONLY=1 recomputes the bounds and tables only.
# GOODPUT=on replays and bounds with statistical efficiency (`--goodput on`), by default into
# benches/results/load-goodput/. POLICIES=learned,learned-rl re-runs those policies only: their
# rows replace theirs in each folder's comparison.csv and .md (plots and bounds are kept; the
# provenance says which rows come from which commit).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
. scripts/bench_lib.sh
goodput=${GOODPUT:-off}
if [ "$goodput" = on ]; then default_out=benches/results/load-goodput; else default_out=benches/results/load; fi
out=${1:-$default_out}
mkdir -p "$out"
configs=${SWEEP:-$LOAD_CONFIGS}
policies=${POLICIES:-fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,sia,synergy-tune,learned,learned-rl}
runs="one replay at a time (--threads 1); wall times in each *.time file"
if [ -n "${POLICIES:-}" ]; then
  before=$(sed -n 's/^commit: //p' "$out/machine.txt" 2>/dev/null || echo unknown)
  runs="$runs; rows of $POLICIES re-run at this commit, every other row from commit: $before"
fi
machine_txt "$out" "scripts/bench_load.sh (configs: $configs; --goodput $goodput)" "$runs"
for c in $configs; do
  trace=${c%%:*}; cluster=${c#*:}; name="$trace-$cluster"
  if [ -n "${POLICIES:-}" ]; then
    $coda compare --goodput "$goodput" --trace "$trace" --cluster "$cluster" --skip-unplaceable \
      --policies "$policies" --threads 1 --quiet --out "$out/$name.part" > /dev/null
    python3 scripts/merge_comparison.py "$out/$name" "$out/$name.part"
    rm -rf "${out:?}/$name.part"
    continue
  fi
  if [ -z "${BOUND_ONLY:-}" ]; then
    /usr/bin/time -f "%e s wall, %M KiB peak RSS (whole compare process)" -o "$out/$name.time" \
      $coda compare --goodput "$goodput" --trace "$trace" --cluster "$cluster" --skip-unplaceable --policies "$policies" \
      --threads 1 --quiet --out "$out/$name" > /dev/null
    # The per-policy folders (jobs, utilisation) are kept out of the repository: 6 MB each.
    rm -rf "${out:?}/$name"/*/
  fi
  $coda bound --goodput "$goodput" --trace "$trace" --cluster "$cluster" --skip-unplaceable --json > "$out/$name/bound.json"
done
python3 scripts/load_table.py "$out"
