# Shared by the bench scripts (sourced, not run): where a result came from, and the server
# options of the CPU/memory runs.

# The load sweep's traces and clusters (scripts/bench_load.sh, scripts/bench_grow.sh): each
# trace at its own cluster and on fewer servers of the same kind; Alibaba at its own only.
# shellcheck disable=SC2034
LOAD_CONFIGS="philly:64xdgx-1-v100 philly:32xdgx-1-v100 philly:16xdgx-1-v100 itp-cluster06:16xnd40rs-v2 itp-cluster06:8xnd40rs-v2 itp-cluster02:16xnd40rs-v2 itp-cluster02:8xnd40rs-v2 alibaba:alibaba-nodes"

# Writes OUT/machine.txt: machine, date, commit (marked when the tree had uncommitted changes),
# COMMAND and, if given, RUNS (how the runs shared the machine).
machine_txt() {
  local out=$1 command=$2 runs=${3:-}
  { echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
    echo "date: $(date -u +%Y-%m-%d)"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml models python || echo ' (with uncommitted changes)')"
    echo "command: $command"
    if [ -n "$runs" ]; then echo "runs: $runs"; fi
  } > "$out/machine.txt"
}

# The `coda compare` options of a server kind: `cpu3` (3 cores per GPU) or `own` (the trace's).
servers_args() {
  [ "$1" = cpu3 ] && echo "--cpu-per-gpu 3" || true
}

# A params file with estimate `$1` = $2 (the shipped file otherwise), path printed.
params_with_estimate() {
  local params
  params=$(mktemp)
  python3 - "$1" "$2" "$params" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"][sys.argv[1]] = float(sys.argv[2])
json.dump(p, open(sys.argv[3], "w"))
PY
  echo "$params"
}

# A params file with estimate `cpu_mem_transfer` = $1, path printed.
params_with_transfer() {
  params_with_estimate cpu_mem_transfer "$1"
}

# The light slices of the `ilp` policy's benches (trace:skip, 150 jobs on 4 x 8): FIFO
# averages under an hour of JCT there or queues for under a third of it. The last four were
# added after the policy's window and credit were changed, to check them on slices that change
# was not measured on.
ILP_LIGHT_SLICES="philly:300 philly:4500 philly:4650 philly:4950 itp-cluster06:1800 itp-cluster06:2100 itp-cluster02:0 itp-cluster02:1500 alibaba:600 alibaba:900 philly:1350 itp-cluster06:1950 itp-cluster02:1650 alibaba:1650"

# One CSV row of a `coda solve --json` answer on stdin: instance ($1), variant ($2), status,
# objective, best_bound, gap, wall_s, iterations, columns, search_nodes, converged, generation_s
# (the configuration program's columns empty for the compact one).
solve_row() {
  python3 -c "
import json,sys
d=json.load(sys.stdin); c=d.get('columns') or {}
print(','.join(str(x) for x in [sys.argv[1],sys.argv[2],d['status'],d['objective'],d['best_bound'],d['gap'],d['wall_time_s'],c.get('iterations',''),c.get('columns',''),c.get('search_nodes',''),c.get('converged',''),c.get('generation_s','')]))" "$1" "$2"
}

# A work-limited `ilp`-policy replay of a light slice (150 jobs on 4 x 8; node limit 100, work
# limit $4 pricing nodes a round — or, written N/job, N per job the round's program decides
# (`--ilp-work-per-job`) —, one HiGHS thread, a time limit that does not bind: the same replay
# on any machine): `coda compare` into $1 for trace $2 from job $3, the rest of the arguments
# passed on (policies, co-location, params). Uses $coda.
work_limited_compare() {
  local out=$1 trace=$2 skip=$3 work=$4 limit
  shift 4
  case $work in
    */job) limit=(--ilp-work-per-job "${work%/job}") ;;
    *) limit=(--ilp-work-limit "$work") ;;
  esac
  "$coda" compare --trace "$trace" --cluster 4x8 --take 150 --skip "$skip" \
    --ilp-time-limit 600 --ilp-node-limit 100 "${limit[@]}" --solver-threads 1 \
    --threads 1 --out "$out" "$@" > /dev/null
}
