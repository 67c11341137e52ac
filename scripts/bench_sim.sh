#!/usr/bin/env bash
# Simulator benchmark (set-up included): every heuristic baseline and the learned policy on the
# Philly window and on ITP cluster 06 with their default clusters (the learned policy on the
# shipped estimates only; README lists its sensitivity runs), one simulation at a time (single-core wall times):
# as shipped, with every contention estimate charged on top of the trace durations
# (`--contention-allowance 1`), and with every contention estimate off (the learned policy and
# the two best baselines under both in learned-sensitivity/); the ILP against the
# heuristics on a small Philly slice; and the sensitivity of every policy to every named estimate
# (`coda sensitivity`, both cores). Writes comparison tables (CSV and Markdown), JCT-CDF and
# utilisation plots, and the whole-process peak memory, under benches/results/sim/ (or $1).
# CODA_BIN runs another build of coda (e.g. a copy, so that rebuilding does not disturb a run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=${1:-benches/results/sim}
mkdir -p "$out"
{
  echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "command: scripts/bench_sim.sh"
} > "$out/machine.txt"

run() { # name, then compare arguments
  local name=$1; shift
  /usr/bin/time -f "%e s wall, %M KiB peak RSS (whole compare process)" -o "$out/$name.time" \
    $coda "$@" --threads 1 --quiet --out "$out/$name" > /dev/null
  # Keep the tables, the plots and the ILP's per-round solve log; the per-policy job and
  # timeline CSVs are large and rebuilt by this script.
  for f in "$out/$name"/*/solves.csv; do
    [ -f "$f" ] && cp "$f" "$out/$name/solves-$(basename "$(dirname "$f")").csv"
  done
  rm -rf "${out:?}/$name"/*/
  cat "$out/$name/comparison.md" "$out/$name.time"
}

python3 - "$out/contention_off.json" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
e = p["estimates"]
e.update(colocation_coupling=0.0, pcie_share_comm_penalty=0.0,
         cross_socket_comm_factor=1.0, nic_bandwidth_fraction=0.0)
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
every=fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random
mkdir -p "$out/learned-sensitivity"
for t in philly itp-cluster06; do
  run "$t" compare --trace "$t" --policies "$every,learned"
  run "$t-allowance1" compare --trace "$t" --contention-allowance 1
  run "$t-contention-off" compare --trace "$t" --params "$out/contention_off.json"
  # The learned policy's lead over the two best baselines under the same two settings.
  run "learned-sensitivity/$t-off" compare --trace "$t" --policies pollux,drf,learned \
    --params "$out/contention_off.json"
  run "learned-sensitivity/$t-a1" compare --trace "$t" --policies pollux,drf,learned \
    --contention-allowance 1
done
rm -f "$out/contention_off.json"
run philly150-4x8-ilp compare --trace philly --take 150 --cluster 4x8 \
  --policies fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random,ilp \
  --ilp-time-limit 30 --ilp-node-limit 100 --ilp-max-jobs 10
run philly150-4x8-learned compare --trace philly --take 150 --cluster 4x8 --policies "$every,learned"
run itp-cluster06-300-8x8-learned compare --trace itp-cluster06 --take 300 --cluster 8x8 \
  --policies "$every,learned"
# The ILP on the same 300-job ITP slice (the baselines' and the learned policy's rows are in the
# run above): a smaller window and node limit than on Philly, as 8 servers make each node dearer;
# with a window of 10 and 100 nodes a replay was stopped unfinished after 30 minutes.
run itp-cluster06-300-8x8-ilp compare --trace itp-cluster06 --take 300 --cluster 8x8 \
  --policies ilp --ilp-time-limit 10 --ilp-node-limit 50 --ilp-max-jobs 8
for t in philly itp-cluster06; do
  $coda sensitivity --trace "$t" --quiet --out "$out/sensitivity-$t"
done
