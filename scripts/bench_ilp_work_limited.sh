#!/usr/bin/env bash
# The `ilp` policy on the light slices of scripts/bench_ilp_light.sh, work-limited (node limit
# 100, work limit 20,000 pricing nodes, one HiGHS thread, a time limit that does not bind): the
# same replay at every rerun on any machine, unlike the 2-s runs. Each co-location pricing in
# COLOCATIONS (default "full-server progress") at the shipped co-location coupling (0.25; the
# baselines are those of ../runs.csv, which the limits do not change) and at COUPLING (default
# 0.5; every baseline re-run there, `ilp` with each pricing; ITP cluster 02 0 skipped, about
# 15 minutes a replay). Two replays at a time. Writes
# benches/results/ilp-light/work-limited/runs.csv and machine.txt. About 50 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-benches/results/ilp-light/work-limited}
colocations=${COLOCATIONS:-"full-server progress"}
coupling=${COUPLING:-0.5}
slices=${SLICES:-$ILP_LIGHT_SLICES}
baselines="fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,sia,synergy-tune"
mkdir -p "$out"
tmp=$(mktemp -d)
params=$(params_with_estimate colocation_coupling "$coupling")
trap 'rm -rf "$tmp" "$params"' EXIT
replay() { # folder trace skip colocation policies [params]
  work_limited_compare "$tmp/$1" "$2" "$3" 20000 --policies "$5" --ilp-colocation "$4" ${6:+--params "$6"}
}
for s in $slices; do
  trace=${s%%:*}; skip=${s##*:}
  for c in $colocations; do replay "0.25-$c-$trace-$skip" "$trace" "$skip" "$c" ilp & done
  wait
  [ "$s" = itp-cluster02:0 ] && continue
  first=1
  for c in $colocations; do
    policies=ilp; [ $first = 1 ] && policies="$baselines,ilp"; first=0
    replay "$coupling-$c-$trace-$skip" "$trace" "$skip" "$c" "$policies" "$params" &
  done
  wait
done
python3 - "$tmp" "$slices" "$colocations" "$coupling" > "$out/runs.csv" <<'PY'
import glob, json, os, sys
tmp, slices, colocations, coupling = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
print("trace,cluster,skip,take,coupling,policy,ilp_colocation,avg_jct_s,avg_queueing_s,restarts,wall_s")
for s in slices:
    trace, skip = s.split(":")
    for k in ("0.25", coupling):
        for c in colocations:
            for f in sorted(glob.glob(os.path.join(tmp, f"{k}-{c}-{trace}-{skip}", "*", "metrics.json"))):
                m = json.load(open(f))
                p = m["policy"]
                print(",".join(str(x) for x in [trace, m["cluster"], skip, 150, k, p, c if p == "ilp" else "",
                                                m["avg_jct_s"], m["avg_queueing_s"], m["restarts"], m["wall_s"]]))
PY
machine_txt "$out" "bash scripts/bench_ilp_work_limited.sh (COLOCATIONS=$colocations, COUPLING=$coupling)" "coda compare --threads 1, two at a time"
