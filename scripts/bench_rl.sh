#!/usr/bin/env bash
# The learned policies on every shipped trace (set-up included): every heuristic baseline, the
# imitation policy (`learned`), the same refined by RL (`learned-rl`) and level 1 with the
# baselines' placement (`learned-packer`), on the Philly window, ITP clusters 06 and 02 and
# Alibaba with their default clusters, and on the Philly jobs RL never saw (`--skip 2872`);
# then the ablations of models/ablations/ (README, "Reinforcement learning"). Writes comparison
# tables (CSV and Markdown) and JCT-CDF plots under benches/results/rl/ (or $1). Both cores.
# CODA_BIN runs another build of coda (e.g. a copy, so that rebuilding does not disturb a run).
# CODA_SKIP_ILP=1 keeps the ILP runs already there (about 16 minutes; machine.txt says so).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=${1:-benches/results/rl}
mkdir -p "$out"
{
  echo "machine: $(uname -sm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "command: scripts/bench_rl.sh"
  kept=""
  if [ -n "${CODA_SKIP_ILP:-}" ]; then
    kept="; the ILP runs (philly150-4x8-ilp-*) not re-run: from $(grep -m1 '^commit:' "$out/machine.txt" 2>/dev/null || echo 'commit: unknown')"
  fi
  echo "runs: both cores, beside other work on the machine (wall columns are of a shared machine)$kept"
} > "$out/machine.txt.new"
mv "$out/machine.txt.new" "$out/machine.txt"

run() { # name, then compare arguments
  local name=$1; shift
  $coda "$@" --quiet --out "$out/$name" > /dev/null
  # Keep the tables and plots; the per-policy job and timeline CSVs are large.
  rm -rf "${out:?}/$name"/*/
  cat "$out/$name/comparison.md"
}

every=fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random
for t in philly itp-cluster06 itp-cluster02 alibaba; do
  run "$t" compare --trace "$t" --policies "$every,learned,learned-rl,learned-packer"
done
# The Philly jobs after RL's training pool (the first 2,872 jobs): unseen by RL.
run philly-heldout compare --trace philly --skip 2872 --policies "$every,learned,learned-rl"
# Ablations: co-location features dropped from imitation (same labels and settings), and RL
# with level 2 rewarded by level 1's return instead of placement efficiency.
for t in philly itp-cluster06; do
  run "$t-nocoloc" compare --trace "$t" --policies learned \
    --policy-weights models/ablations/policy-nocoloc.safetensors
  run "$t-rl-l2return" compare --trace "$t" --policies learned \
    --policy-weights models/ablations/policy-rl-l2return.safetensors
done
# The per-round ILP on the 150-job Philly slice, from the best heuristic's start and also from
# the learned policy's schedule (`--ilp-policy-start`).
for s in plain pstart; do
  [ -n "${CODA_SKIP_ILP:-}" ] && break
  extra=(); [ "$s" = pstart ] && extra=(--ilp-policy-start)
  run "philly150-4x8-ilp-$s" compare --trace philly --take 150 --cluster 4x8 --policies ilp \
    --ilp-time-limit 30 --ilp-node-limit 100 --ilp-max-jobs 10 "${extra[@]}"
done
# learned-rl under the named contention estimates: all off, and all charged on top of the trace
# durations (pollux and learned under the same settings: benches/results/sim/learned-sensitivity/).
python3 - "$out/contention_off.json" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"].update(colocation_coupling=0.0, pcie_share_comm_penalty=0.0,
                      cross_socket_comm_factor=1.0, nic_bandwidth_fraction=0.0)
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
mkdir -p "$out/sensitivity"
for t in philly itp-cluster06; do
  run "sensitivity/$t-off" compare --trace "$t" --policies learned-rl --params "$out/contention_off.json"
  run "sensitivity/$t-a1" compare --trace "$t" --policies learned-rl --contention-allowance 1
done
rm -f "$out/contention_off.json"
