#!/usr/bin/env bash
# How much the goodput results lean on each estimate and on the fitted gradient noise ratio
# (set-up included): `coda sensitivity --goodput on` (every named estimate low and high, the
# restart cost, the noise ratios halved and doubled) of FIFO, the Pollux-style baseline, Sia and
# `learned` on a congested slice of ITP cluster 06 and of the Philly window. Writes
# benches/results/goodput/sensitivity-<slice>/ (`coda report` renders them). The load sweep
# with goodput on is `GOODPUT=on scripts/bench_load.sh`. About 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=benches/results/goodput
mkdir -p "$out"
. scripts/bench_lib.sh
machine_txt "$out" "scripts/bench_goodput.sh" "one setting at a time (--threads 1)"
for s in itp-cluster06:8xnd40rs-v2:0:300 philly:4xdgx-1-v100:2000:400; do
  IFS=: read -r trace cluster skip take <<< "$s"
  $coda sensitivity --goodput on --trace "$trace" --cluster "$cluster" --skip "$skip" \
    --take "$take" --seed 0 --skip-unplaceable --policies fifo,pollux,sia,learned --threads 1 \
    --quiet --out "$out/sensitivity-$trace-$skip-$take" > /dev/null
done
