#!/usr/bin/env bash
# The lookahead policy against `learned` and the baselines on congested slices of traces the
# learned policy never trained on (set-up included). Per slice: every baseline but `random`,
# `learned`, the lookahead at its defaults, and the lower bound of `coda bound`; on the first
# slice also the ablation (horizon, candidates, tail, who follows, imagined arrivals). One run at
# a time. Writes runs.csv (one row per run, appended as each finishes) and machine.txt to
# benches/results/lookahead/ (or $1), a comparison of learned and lookahead on the first slice
# with decisions.md (`scripts/lookahead_decisions.py`), then `scripts/lookahead_table.py` writes
# lookahead.csv and variants.csv (`coda report` renders them in benches/results/README.md).
# Every slice under each seed of SEEDS (default "0 1 2": the trace's model assignment and the
# policies' random choices; the ablation under seed 0 only). SLICES limits the slices
# ("trace:cluster:skip:take ..."); ABLATION=0 skips the ablation; APPEND=1 adds rows to an
# existing runs.csv instead of starting it afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=${1:-benches/results/lookahead}
mkdir -p "$out"
# ITP cluster 06 was never trained on; Philly's jobs after the first 150 neither (POLICY.md).
slices=${SLICES:-"itp-cluster06:8xnd40rs-v2:0:300 itp-cluster06:8xnd40rs-v2:600:300 philly:4xdgx-1-v100:2000:400 philly:4xdgx-1-v100:3000:400"}
baselines="fifo srtf drf tiresias optimus sjf-bco pollux synergy-tune"
. scripts/bench_lib.sh
seeds=${SEEDS:-"0 1 2"}
csv="$out/runs.csv"
if [ "${APPEND:-0}" = 1 ] && [ -f "$csv" ]; then
  echo "appended: $(date -u +%Y-%m-%d) commit $(git rev-parse --short HEAD), seeds $seeds, slices $slices" >> "$out/machine.txt"
else
  machine_txt "$out" "scripts/bench_lookahead.sh (slices: $slices; seeds: $seeds)" \
    "one replay at a time; the lookahead's plays run on every core (rayon), the rest on one"
  echo "trace,cluster,skip,take,seed,policy,variant,settings,avg_jct_s,avg_queueing_s,restarts,wall_s,jobs_unfinished,notes" > "$csv"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# run TRACE CLUSTER SKIP TAKE SEED POLICY VARIANT [FLAGS...]: one replay, one row.
run() {
  local trace=$1 cluster=$2 skip=$3 take=$4 seed=$5 policy=$6 variant=$7
  shift 7
  $coda simulate --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
    --seed "$seed" --skip-unplaceable --policy "$policy" --out "$tmp/run" --json "$@" > "$tmp/run.json"
  python3 - "$tmp/run.json" "$csv" "$trace" "$cluster" "$skip" "$take" "$seed" "$policy" "$variant" "$*" <<'PY'
import csv, json, sys
m = json.load(open(sys.argv[1]))
row = sys.argv[3:10] + [sys.argv[10], m["avg_jct_s"], m["avg_queueing_s"], m["restarts"],
                       m["wall_s"], m["jobs_unfinished"], " | ".join(m.get("policy_notes") or [])]
with open(sys.argv[2], "a", newline="") as f:
    csv.writer(f).writerow(row)
PY
}
first=1
for s in $slices; do
  IFS=: read -r trace cluster skip take <<< "$s"
  for seed in $seeds; do
    w=("$trace" "$cluster" "$skip" "$take" "$seed")
    $coda bound --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" --seed "$seed" \
      --skip-unplaceable --json > "$out/bound-$trace-$cluster-$skip-$take-s$seed.json"
    for p in $baselines learned; do run "${w[@]}" "$p" default; done
    run "${w[@]}" lookahead default
    if [ "$first" = 1 ] && [ "$seed" = 0 ] && [ "${ABLATION:-1}" = 1 ]; then
      for h in 6 12 48; do run "${w[@]}" lookahead "rounds=$h" --lookahead-rounds "$h"; done
      for k in 2 3 10; do run "${w[@]}" lookahead "candidates=$k" --lookahead-candidates "$k"; done
      run "${w[@]}" lookahead "tail=none" --lookahead-tail none
      run "${w[@]}" lookahead "follow=candidate" --lookahead-follow candidate
      run "${w[@]}" lookahead "arrivals=sampled" --lookahead-arrivals sampled
    fi
  done
  first=0
done
# What the lookahead changes, on the first slice: learned and lookahead side by side (table,
# JCT CDF, utilisation), each run's per-job records kept for decisions.md.
IFS=: read -r trace cluster skip take <<< "${slices%% *}"
cmp="$out/$trace-$cluster-$skip-$take"
$coda compare --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" --skip-unplaceable \
  --policies learned,lookahead --threads 1 --quiet --out "$cmp" > /dev/null
for p in learned lookahead; do find "$cmp/$p" -type f ! -name jobs.csv -delete; done
python3 scripts/lookahead_decisions.py "$cmp"
python3 scripts/lookahead_table.py "$out"
