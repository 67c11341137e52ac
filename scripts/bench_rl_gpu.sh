#!/usr/bin/env bash
# Replays of the RL runs scripts/gpu_rl.sh trained (on a GPU machine; their folders unpacked in
# $1, default train-out/gpu): each run's weights, the imitation start (`learned`) and every
# heuristic baseline on the traces RL never saw — the Philly jobs after its pool (`--skip
# 2872`), ITP cluster 02 and Alibaba — and on the Philly window and ITP cluster 06 (its pool is
# the Philly window's first 2,872 jobs; CODA_TRACES picks fewer). Same trace, seed and cluster
# for every policy (common random numbers). Writes benches/results/rl_gae/ (or $2): replays.csv (one row per trace and
# policy), the runs' weights, learning curves and throughput curves; `coda report` makes the
# tables (benches/results/README.md, "rl_gae").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
. scripts/bench_lib.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
runs=${1:-train-out/gpu}
out=${2:-benches/results/rl_gae}
mkdir -p "$out/curves" "$out/weights"
machine_txt "$out" "scripts/bench_rl_gpu.sh $runs" \
  "replays on both cores here; the runs were trained on the GPU machine of $runs/machine.txt"
cp "$runs/machine.txt" "$out/gpu_machine.txt"
names=()
for d in "$runs"/*/; do
  n=$(basename "$d")
  [ -f "$d/policy-rl.safetensors" ] || continue
  names+=("$n")
  cp "$d/curve.csv" "$out/curves/$n.csv"
  cp "$d/policy-rl.safetensors" "$out/weights/$n.safetensors"
done
# Throughput: the GPU machine's learner on its GPU and on its CPU; tp-local, if there, is the
# same command on this machine (`--device cpu --threads $(nproc)`).
for d in tp-cuda tp-cpu tp-local; do
  [ -f "$runs/$d/curve.csv" ] && cp "$runs/$d/curve.csv" "$out/curves/throughput-$d.csv"
done
every=fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
replay() { # folder, then compare arguments
  local dir=$1; shift
  $coda compare "$@" --quiet --out "$tmp/$dir" > /dev/null
  echo "$tmp/$dir/comparison.csv"
}
jobs_list=()
for t in ${CODA_TRACES:-philly-heldout itp-cluster02 alibaba philly itp-cluster06}; do
  args=(--trace "${t%-heldout}"); [ "$t" = philly-heldout ] && args+=(--skip 2872)
  jobs_list+=("$t|start|$(replay "$t-start" "${args[@]}" --policies "$every,learned")")
  for n in "${names[@]}"; do
    jobs_list+=("$t|$n|$(replay "$t-$n" "${args[@]}" --policies learned \
      --policy-weights "$out/weights/$n.safetensors")")
  done
done
python3 - "$out" "${jobs_list[@]}" <<'PY'
import csv, sys, statistics as st
out, runs = sys.argv[1], sys.argv[2:]
rows = []
for r in runs:
    trace, run, path = r.split("|")
    for row in csv.DictReader(open(path)):
        name = row["policy"] if run == "start" else run
        rows.append(dict(trace=trace, policy=name, avg_jct_h=float(row["avg_jct_s"]) / 3600,
                         p99_jct_h=float(row["p99_jct_s"]) / 3600,
                         makespan_h=float(row["makespan_s"]) / 3600,
                         restarts=int(row["restarts"]), unfinished=int(row["jobs_unfinished"])))
with open(f"{out}/replays.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader(); w.writerows(rows)
PY
