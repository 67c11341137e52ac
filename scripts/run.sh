#!/usr/bin/env bash
# Set-up included: installs what is missing, builds, and runs the main job on the shipped data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=target/release/coda
out=${CODA_OUT:-out}
mkdir -p "$out"

echo "== 1. calibrate the performance model on datasets/ (held-out fit quality per model)"
$coda calibrate --out "$out/perf_params.json" --quality-csv "$out/fit_quality.csv" \
  --placement-csv "$out/placement_check.csv" | grep -E '^summary|TFLOP|^placement check|^\| (gavel|pollux/(aws|azure)) .* \| (2|8) \|'
cmp -s "$out/perf_params.json" models/perf_params.json \
  && echo "   rebuilt parameters are identical to models/perf_params.json" \
  || { echo "   models/perf_params.json differs from a fresh calibration" >&2; exit 1; }

echo "== 2. load the shipped traces and assign models (seed 0)"
for t in philly itp alibaba; do $coda trace --trace "$t"; done

echo "== 3. what-if: imagenet on 4 T4s, packed vs one per server (Pollux's aws profile: packing wins)"
$coda perf --model imagenet --workers 4 --placement 4 --gpu t4
$coda perf --model imagenet --workers 4 --placement 1,1,1,1 --gpu t4
echo "   ... and on 8 V100s (Sia's azure profile measured 8-on-one-server slower than 4+4)"
$coda perf --model imagenet --workers 8 --placement 8 --gpu v100
$coda perf --model imagenet --workers 8 --placement 4,4 --gpu v100

echo "== 4. validate a schedule and price it in context"
$coda validate --instance examples/instances/hetero.json --schedule examples/instances/hetero.schedule.json

echo "== 5. solve rounds exactly (ILP, HiGHS, 1 thread) and write the schedules"
$coda solve --instance examples/instances/small.json --out "$out/small.ilp.json"
$coda solve --instance examples/instances/hetero.json --time-limit 60 --out "$out/hetero.ilp.json"
$coda validate --instance examples/instances/hetero.json --schedule "$out/hetero.ilp.json" | head -2
$coda solve --instance examples/instances/hetero.json --export-mps "$out/hetero.mps" --export-only

echo "== 6. the learned policy (shipped weights) against the exact program on held-out rounds"
$coda gap --labels benches/results/gap/held_out.jsonl --out "$out/gap" \
  | grep -E '^\| (rounds|all) \| (policy|learned|learned-greedy|best-heuristic|pollux|expert) \|'

echo "== 7. replay the Philly window (5,745 jobs, 64 DGX-1 servers) under four baselines and the"
echo "   learned policy, in parallel (the contention allowance is measured first by a FIFO replay)"
$coda compare --trace philly --policies fifo,tiresias,sjf-bco,pollux,learned --quiet --out "$out/sim"
echo "   table, JCT CDF and utilisation plots: $out/sim/comparison.md, $out/sim/*.svg"

echo "== 8. the same from Python: the wheel built and installed into .venv-py, then the quick start"
echo "   (a round, a replay, an error, the Gymnasium environment; examples/python/quick_start.py)"
bash scripts/setup_python.sh
.venv-py/bin/python examples/python/quick_start.py
