#!/usr/bin/env bash
# Simulator benchmark (set-up included): every heuristic baseline on the Philly window and on
# ITP cluster 06 with their default clusters, one simulation at a time (single-core wall times),
# the ILP against the heuristics on a small Philly slice, and the Philly window again with the
# co-location coupling estimate set to 0 (sensitivity). Writes comparison tables (CSV and
# Markdown), JCT-CDF and utilisation plots, and the whole-process peak memory, under
# benches/results/sim/ (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=target/release/coda
out=${1:-benches/results/sim}
mkdir -p "$out"
{
  echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "date: $(date -u +%Y-%m-%d)"
} > "$out/machine.txt"

run() { # name, then compare arguments
  local name=$1; shift
  /usr/bin/time -f "%e s wall, %M KiB peak RSS (whole compare process)" -o "$out/$name.time" \
    $coda "$@" --threads 1 --quiet --out "$out/$name" > /dev/null
  # Keep the tables and plots; the per-policy job and timeline CSVs are large and rebuilt by this script.
  rm -rf "${out:?}/$name"/*/
  cat "$out/$name/comparison.md" "$out/$name.time"
}

run philly compare --trace philly
run itp-cluster06 compare --trace itp-cluster06
run philly150-4x8-ilp compare --trace philly --take 150 --cluster 4x8 \
  --policies fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random,ilp \
  --ilp-time-limit 2 --ilp-max-jobs 10
python3 - "$out/no_colocation.json" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"]["colocation_coupling"] = 0.0
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
run philly-no-colocation compare --trace philly --params "$out/no_colocation.json"
rm -f "$out/no_colocation.json"
