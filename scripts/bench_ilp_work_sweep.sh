#!/usr/bin/env bash
# How much of a work-limited `ilp` replay is the solver's and how much its start: SLICES (light
# slices of scripts/bench_ilp_light.sh, default Philly 300 and 1350) replayed with the policy's
# defaults under each work limit in WORK_LIMITS (pricing-search nodes per round, or N/job: N per
# job the round's program decides, `--ilp-work-per-job`; node limit 100,
# one HiGHS thread, a time limit that does not bind, so every row repeats on any machine), with
# the rounds whose solve returned its start (the best heuristic's schedule) counted from
# solves.csv. Two replays at a time. Writes benches/results/ilp-light/work-limited/sweep/work.csv
# and machine.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
coda=${CODA:-target/release/coda}
out=${1:-benches/results/ilp-light/work-limited/sweep}
slices=${SLICES:-"philly:300 philly:1350"}
limits=${WORK_LIMITS:-"20000 100000 400000 10000/job 80000/job"}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for s in $slices; do
  trace=${s%%:*}; skip=${s##*:}
  for w in $limits; do
    work_limited_compare "$tmp/$trace-$skip-${w/\/job/job}" "$trace" "$skip" "$w" --policies ilp &
    n=$((n + 1)); [ $((n % 2)) = 0 ] && wait
  done
done
wait
python3 - "$tmp" "$slices" "$limits" > "$tmp/work.csv" <<'PY'
import csv, json, os, sys
tmp, slices, limits = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
print("trace,cluster,skip,take,work_limit,work_per_job,avg_jct_s,avg_queueing_s,restarts,solves,returned_start,wall_s")
for s in slices:
    trace, skip = s.split(":")
    for w in limits:
        per_job = w.endswith("/job")
        d = os.path.join(tmp, f"{trace}-{skip}-{w.replace('/job', 'job')}", "ilp")
        m = json.load(open(os.path.join(d, "metrics.json")))
        rows = list(csv.DictReader(open(os.path.join(d, "solves.csv"))))
        kept = sum(r["returned_start"] == "true" for r in rows)
        print(",".join(str(x) for x in [trace, m["cluster"], skip, 150, "" if per_job else w,
                                        w[:-4] if per_job else "", m["avg_jct_s"],
                                        m["avg_queueing_s"], m["restarts"], len(rows), kept, m["wall_s"]]))
PY
mv "$tmp/work.csv" "$out/work.csv"
machine_txt "$out" "bash scripts/bench_ilp_work_sweep.sh (SLICES=$slices, WORK_LIMITS=$limits)" "coda compare --threads 1, two at a time"
