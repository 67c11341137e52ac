#!/usr/bin/env bash
# The `ilp` policy on light load, as a new user would run it: 150-job slices of the shipped
# traces on 4 x 8 GPUs whose FIFO replay averages under an hour of JCT or queues for under a
# third of it (found by replaying every 300th slice under FIFO), every baseline,
# `learned` and `ilp --ilp-time-limit 2` (LIMIT) side by side (`coda compare`, one run at a
# time). Writes benches/results/ilp-light/runs.csv (one row per slice and policy) and
# machine.txt. The time limit makes `ilp` depend on the machine's speed: its rows are of this
# machine. About 20 minutes on 2 cores. RESTART_S: the restart-loss estimate (`--restart-s`,
# default 60 s, the shipped value) — another value writes to benches/results/ilp-light/restart-S/
# (the sensitivity of the result to that estimate; set SLICES to the slices of interest).
# KAPPA: the in-service credit of ilp's objective (`--ilp-in-service-credit`, default 1, the
# shipped value) — another value writes to benches/results/ilp-light/kappa-K/; MAX_JOBS: ilp's
# window (`--ilp-max-jobs`, default 12) — another value writes to .../window-M/ (below kappa-K/
# if both are set); COLOCATION: what a co-runner costs in ilp's objective (`--ilp-colocation`,
# default progress, the shipped value) — another value writes to .../colocation-C/ (above
# the others); COUPLING: the co-location coupling estimate (`colocation_coupling` in
# models/perf_params.json, shipped 0.25; simulator, baselines and `ilp` alike) — another value
# writes to .../coupling-X/ (the sensitivity of the result to that estimate); POLICIES: the
# policies replayed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
restart=${RESTART_S:-60}
out=benches/results/ilp-light
kappa=${KAPPA:-1}
max_jobs=${MAX_JOBS:-12}
colocation=${COLOCATION:-progress}
coupling=${COUPLING:-0.25}
[ "$colocation" = progress ] || out=$out/colocation-$colocation
[ "$restart" = 60 ] || out=$out/restart-$restart
[ "$coupling" = 0.25 ] || out=$out/coupling-$coupling
[ "$kappa" = 1 ] || out=$out/kappa-$kappa
[ "$max_jobs" = 12 ] || out=$out/window-$max_jobs
out=${1:-$out}
limit=${LIMIT:-2}
slices=${SLICES:-$ILP_LIGHT_SLICES}
policies=${POLICIES:-"fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,sia,random,synergy-tune,learned,ilp"}
mkdir -p "$out"
tmp=$(mktemp -d)
params=$(params_with_estimate colocation_coupling "$coupling")
trap 'rm -rf "$tmp" "$params"' EXIT
echo "trace,cluster,skip,take,policy,avg_jct_s,avg_queueing_s,restarts,wall_s" > "$tmp/runs.csv"
for s in $slices; do
  trace=${s%%:*}; skip=${s##*:}
  "$coda" compare --trace "$trace" --cluster 4x8 --take 150 --skip "$skip" --policies "$policies" \
    --ilp-time-limit "$limit" --restart-s "$restart" --ilp-in-service-credit "$kappa" --ilp-max-jobs "$max_jobs" --ilp-colocation "$colocation" --params "$params" --threads 1 \
    --out "$tmp/$trace-$skip" > /dev/null
  python3 - "$tmp/$trace-$skip" "$trace" "$skip" >> "$tmp/runs.csv" <<'PY'
import glob, json, os, sys
d, trace, skip = sys.argv[1:]
for f in sorted(glob.glob(os.path.join(d, "*", "metrics.json"))):
    m = json.load(open(f))
    print(",".join(str(x) for x in [trace, m["cluster"], skip, 150, m["policy"], m["avg_jct_s"],
                                    m["avg_queueing_s"], m["restarts"], m["wall_s"]]))
PY
  tail -n 12 "$tmp/runs.csv" >&2
done
mv "$tmp/runs.csv" "$out/runs.csv"
machine_txt "$out" "bash scripts/bench_ilp_light.sh (LIMIT=$limit, RESTART_S=$restart, KAPPA=$kappa, MAX_JOBS=$max_jobs, COLOCATION=$colocation, COUPLING=$coupling)" "coda compare --threads 1"
