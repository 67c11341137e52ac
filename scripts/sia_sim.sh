#!/usr/bin/env bash
# coda beside Sia, Pollux and Gavel inside Sia's own simulator (scripts/sia_sim.py says how the
# conversion works and what it loses). Takes a checkout of siasosp23/artifacts (or its
# sia-simulator/ folder); nothing of it is copied into this repository.
#
#   bash scripts/sia_sim.sh PATH/artifacts                     # philly workloads 1-4, every policy
#   WORKLOADS="1" POLICIES="sia coda-learned" bash scripts/sia_sim.sh PATH/artifacts
#
# POLICIES: Sia's own (sia, pollux, gavel: their run_experiment.sh flags and rounds) and coda's
# (coda-learned, coda-exact, coda-<any --policy>; a learned one with -grow<N>: N moves of local
# search ending each round, --policy-grow), coda's with goodput on unless GOODPUT=off.
# Rows go to benches/results/sia-sim/runs.csv (a rerun replaces its row), with machine.txt.
# Sia's simulator needs its own Python stack (pandas 1.5, cvxpy with CBC and GLPK): a virtual
# environment .venv-sia (or $CODA_SIA_VENV) with coda's wheel installed; Pollux's policy needs
# pymoo 0.4, which needs numpy < 1.24 while CBC's bindings (cylp) need numpy >= 1.26: a second
# one, .venv-sia-pollux, runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
src=${1:?usage: bash scripts/sia_sim.sh PATH/TO/siasosp23-artifacts}
sia=$src
[ -d "$sia/sia-simulator" ] && sia=$sia/sia-simulator
[ -f "$sia/multi_simulator.py" ] || { echo "sia_sim: no multi_simulator.py under $src" >&2; exit 1; }
WORKLOADS=${WORKLOADS:-1 2 3 4}
POLICIES=${POLICIES:-sia coda-learned coda-learned-grow8 pollux gavel coda-exact}
GOODPUT=${GOODPUT:-on}
EXACT_INTERVAL=${EXACT_INTERVAL:-60}
EXACT_TIME_LIMIT=${EXACT_TIME_LIMIT:-2}
out=benches/results/sia-sim
mkdir -p "$out"

sia_venv="${CODA_SIA_VENV:-$(pwd)/.venv-sia}"
if [ ! -x "$sia_venv/bin/python" ]; then
  python3 -m venv "$sia_venv"
fi
# Pinned: what Sia's imports need (its requirements.txt pins numpy 1.23 for pymoo 0.4.2.1;
# cylp 0.94.1, CBC for Sia's program, needs numpy >= 1.26; Gavel's solver is ECOS).
"$sia_venv/bin/pip" install -q --disable-pip-version-check numpy==1.26.4 pandas==1.5.3 scipy==1.10.1 \
  cvxpy==1.6.0 cvxopt==1.3.3 cylp==0.94.1 ecos==2.0.14 rich psutil autograd gymnasium==1.4.0 \
  maturin==1.16.0
pollux_venv="$sia_venv-pollux"
if [[ " $POLICIES " == *" pollux "* ]]; then
  [ -x "$pollux_venv/bin/python" ] || python3 -m venv "$pollux_venv"
  "$pollux_venv/bin/pip" install -q --disable-pip-version-check numpy==1.23.5 pandas==1.5.3 \
    scipy==1.10.1 cvxpy==1.6.0 cvxopt==1.3.3 pymoo==0.4.2.1 rich psutil autograd
fi
bash scripts/setup.sh
. scripts/env.sh
"$sia_venv/bin/maturin" build --release --locked -o target/wheels 2>&1 | grep -E 'Built wheel|error' >&2
"$sia_venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/coda-0.1.0-cp310-abi3-*.whl

logs=$(mktemp -d)
for w in $WORKLOADS; do
  for p in $POLICIES; do
    extra=()
    case $p in
      coda-exact) extra=(--interval "$EXACT_INTERVAL" --time-limit "$EXACT_TIME_LIMIT") ;;
      pollux) extra=(--python "$pollux_venv/bin/python") ;;
    esac
    echo "sia_sim: workload-$w $p" >&2
    "$sia_venv/bin/python" scripts/sia_sim.py --sia "$sia" --workload "workloads/philly/workload-$w.csv" \
      --policy "$p" --goodput "$GOODPUT" --logs "$logs" --out "$out/runs.csv" "${extra[@]}"
  done
done
rm -rf "$logs"
machine_txt "$out" "scripts/sia_sim.sh (workloads: $WORKLOADS; policies: $POLICIES; goodput $GOODPUT; Sia checkout $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown))"
