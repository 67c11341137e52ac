#!/usr/bin/env bash
# The lookahead distilled into the networks (scripts/distil_net.sh) against today's `learned`
# and the lookahead itself, on two sets of slices the students never trained on (set-up
# included): the lookahead's own (ITP cluster 06 on 8 x ND40rs-v2, Philly jobs 2000+ on
# 4 x DGX-1) and the distilled gate's other slices (ITP cluster 02 jobs 2000-3299 on 8 x
# ND40rs-v2, Philly jobs 1500-2099 on 4 x DGX-1), seeds 0-2 (SEEDS). One replay at a time: the
# lookahead's plays run on every core, the rest on one. Every *.safetensors of the folder is a
# student, replayed as `learned` with those weights (its name: the file's). Writes runs.csv
# (one row per replay) and machine.txt to benches/results/lookahead/distil-net/ (or $1); `coda
# report` renders them. ONLY="NAME ..." replays only those policies (`learned`, `lookahead` or
# students), every other row of runs.csv kept. Then the sensitivity of `learned`, `six-dagger`
# and `six-dagger-rl` to every named estimate on two slices (sensitivity/; SENSITIVITY=0: not run),
# and extra.csv: the shipped `learned-rl` and the greedy decodings (`--policy-samples 1`) of
# `learned`, `six-dagger` and `six-dagger-rl` (EXTRA=0: not run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=${1:-benches/results/lookahead/distil-net}
mkdir -p "$out"
evaluation="itp-cluster06:8xnd40rs-v2:0:300 itp-cluster06:8xnd40rs-v2:600:300 philly:4xdgx-1-v100:2000:400 philly:4xdgx-1-v100:3000:400"
other="itp-cluster02:8xnd40rs-v2:2000:300 itp-cluster02:8xnd40rs-v2:3000:300 philly:4xdgx-1-v100:1500:300 philly:4xdgx-1-v100:1800:300"
seeds=${SEEDS:-"0 1 2"}
. scripts/bench_lib.sh
csv="$out/runs.csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head="set,trace,cluster,skip,take,seed,policy,avg_jct_s,restarts,wall_s"
only=${ONLY:-}
runs="one replay at a time"
if [ -n "$only" ] && [ -f "$csv" ]; then
  # What the kept rows were made on, said again (machine, commit, how they ran).
  before=$(sed -n 's/^\(machine\|commit\|runs\): //p' "$out/machine.txt" 2>/dev/null | paste -sd';' - || true)
  runs="$runs; rows of $only re-run at this commit on this machine; every other row as before: ${before:-unknown}"
  # Column 7 is the policy.
  awk -F, -v only=" $only " 'NR > 1 && index(only, " " $7 " ") == 0' "$csv" > "$tmp/kept.csv"
else
  : > "$tmp/kept.csv"
fi
machine_txt "$out" "scripts/bench_distil_net.sh (seeds: $seeds)" "$runs"
echo "$head" > "$csv"
cat "$tmp/kept.csv" >> "$csv"
# run CSV SET SLICE SEED NAME FLAGS...: one replay, one row of CSV (extra.csv's rows also name
# the flags).
run() {
  local dest=$1 set=$2 trace=$3 cluster=$4 skip=$5 take=$6 seed=$7 name=$8
  shift 8
  [ "$dest" = "$csv" ] || name="$name,$*"
  $coda simulate --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
    --seed "$seed" --skip-unplaceable --out "$tmp/run" --json --quiet "$@" > "$tmp/run.json"
  python3 - "$tmp/run.json" "$set,$trace,$cluster,$skip,$take,$seed,$name" >> "$dest" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{m['avg_jct_s']},{m['restarts']},{m['wall_s']}")
PY
}
extra="$out/extra.csv"
# each FN ARGS...: FN SET TRACE CLUSTER SKIP TAKE SEED ARGS... for every run, set by set.
each() {
  local set s trace cluster skip take seed
  for set in evaluation other; do
    local slices=$evaluation
    [ "$set" = other ] && slices=$other
    for s in $slices; do
      IFS=: read -r trace cluster skip take <<< "$s"
      for seed in $seeds; do
        "$@" "$set" "$trace" "$cluster" "$skip" "$take" "$seed"
      done
    done
  done
}
# wanted NAME: whether NAME is replayed (every policy, unless ONLY names some).
wanted() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
# One run's rows of runs.csv: today's learned, the lookahead, then every student.
policies() {
  wanted learned && run "$csv" "$@" learned --policy learned
  wanted lookahead && run "$csv" "$@" lookahead --policy lookahead
  local f name
  for f in "$out"/*.safetensors; do
    name=$(basename "$f" .safetensors)
    if wanted "$name"; then
      run "$csv" "$@" "$name" --policy learned --policy-weights "$f"
    fi
  done
}
# greedy NAME SET...SEED: NAME's greedy decoding (`learned`: the shipped weights), a row of extra.csv.
greedy() {
  local name=$1 weights=()
  shift
  [ "$name" = learned ] || weights=(--policy-weights "$out/$name.safetensors")
  run "$extra" "$@" "$name-greedy" --policy learned "${weights[@]}" --policy-samples 1
}
each policies
# Which named estimate moves the comparison: `coda sensitivity` of today's learned, of
# `six-dagger` and of PPO's iterate from it (`six-dagger-rl`), every estimate at its low and
# high value, on the first slice of each trace of the evaluation, seed 0, one table per slice
# in sensitivity/ (SENSITIVITY=0: not run).
if [ "${SENSITIVITY:-1}" != 0 ]; then
  sens="$out/sensitivity"
  mkdir -p "$sens"
  machine_txt "$sens" "scripts/bench_distil_net.sh (its sensitivity step)" "one setting at a time"
  students="six-dagger six-dagger-rl"
  for s in itp-cluster06:8xnd40rs-v2:0:300 philly:4xdgx-1-v100:2000:400; do
    IFS=: read -r trace cluster skip take <<< "$s"
    dest="$sens/$trace-$cluster-$skip-$take-s0"
    for name in learned $students; do
      weights=()
      [ "$name" = learned ] || weights=(--policy-weights "$out/$name.safetensors")
      $coda sensitivity --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
        --seed 0 --skip-unplaceable --policies learned "${weights[@]}" --threads 1 --quiet \
        --out "$tmp/sens-$name" > /dev/null
    done
    mkdir -p "$dest"
    # One table: each student's rows named after it (all ran as `learned`).
    python3 - "$dest/sensitivity.csv" "$tmp" $students <<'PY'
import csv, sys
dest, tmp, students = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = list(csv.DictReader(open(f"{tmp}/sens-learned/sensitivity.csv")))
for name in students:
    for r in csv.DictReader(open(f"{tmp}/sens-{name}/sensitivity.csv")):
        r["policy"] = name
        rows.append(r)
with open(dest, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
PY
  done
fi
[ "${EXTRA:-1}" = 0 ] && exit 0
echo "set,trace,cluster,skip,take,seed,policy,flags,avg_jct_s,restarts,wall_s" > "$extra"
rl() { run "$extra" "$@" learned-rl --policy learned-rl; }
each rl
for name in six-dagger six-dagger-rl learned; do
  each greedy "$name"
done
