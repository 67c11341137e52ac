#!/usr/bin/env bash
# The live Slurm test as a benchmark: a real Slurm on this machine (scripts/slurm_cluster.sh),
# the workload replayed under Slurm's backfill and under `coda slurm run`, the fault cases;
# tables to benches/results/slurm/ (summary.csv, live.csv, faults.csv, live.md, machine.txt),
# rendered by `coda report`. About 5 minutes, as root (it installs and starts Slurm).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
. scripts/bench_lib.sh
cargo build --release --locked --quiet
out=benches/results/slurm
mkdir -p "$out"
work=$(mktemp -d)
export CODA_SLURM_DIR="$work/slurm"
trap 'bash scripts/slurm_cluster.sh down; rm -rf "$work"' EXIT
bash scripts/slurm_cluster.sh up
python3 scripts/slurm_live.py --faults --out "$work/live" "$@"
cp "$work"/live/{summary.csv,live.csv,faults.csv,live.md} "$out"/
machine_txt "$out" "scripts/bench_slurm.sh $*" \
  "one replay at a time on both cores; Slurm 22.05.8 from Debian 12 (slurmctld, 4 slurmd, munge)"
