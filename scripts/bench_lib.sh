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

# A params file with estimate `cpu_mem_transfer` = $1 (the shipped file otherwise), path printed.
params_with_transfer() {
  local params
  params=$(mktemp)
  python3 - "$1" "$params" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"]["cpu_mem_transfer"] = float(sys.argv[1])
json.dump(p, open(sys.argv[2], "w"))
PY
  echo "$params"
}

# One CSV row of a `coda solve --json` answer on stdin: instance ($1), variant ($2), status,
# objective, best_bound, gap, wall_s, iterations, columns, search_nodes, converged, generation_s
# (the configuration program's columns empty for the compact one).
solve_row() {
  python3 -c "
import json,sys
d=json.load(sys.stdin); c=d.get('columns') or {}
print(','.join(str(x) for x in [sys.argv[1],sys.argv[2],d['status'],d['objective'],d['best_bound'],d['gap'],d['wall_time_s'],c.get('iterations',''),c.get('columns',''),c.get('search_nodes',''),c.get('converged',''),c.get('generation_s','')]))" "$1" "$2"
}
