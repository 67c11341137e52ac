#!/usr/bin/env bash
# Reproduces the shipped gate of the `distilled` policy (models/distilled.json) from scratch:
# the lookahead's plays on the rounds `learned` visits on training slices (ITP cluster 02,
# Philly's jobs 500-1399; never the evaluation's ITP cluster 06 or Philly after job 2000), a
# first gate fitted to them, then DAGGER_ROUNDS (default 3) rounds of DAgger (the rounds the
# last gate's policy visits, played, and a gate refitted to every play), the last gate shipped. The fit table goes to
# benches/results/lookahead/gate_fit.csv (held out: a Philly slice the gate never fits on).
# At most 1,500 played rounds a slice. Writes the plays to $CODA_DISTIL_OUT (default distil-out/).
# About 15 minutes of plays on 2 cores (each slice is replayed and played once per round of DAgger).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=target/release/coda
out=${CODA_DISTIL_OUT:-distil-out}
mkdir -p "$out"
slices="itp-cluster02:8xnd40rs-v2:0:300:0 itp-cluster02:8xnd40rs-v2:1000:300:1 philly:4xdgx-1-v100:500:400:0 philly:4xdgx-1-v100:1000:400:1"
holdout="philly:4xdgx-1-v100:1500:300:2"
# The gate chooses between the learned proposal, the one that moves nothing and the greedy
# decoding (the lookahead's choice in over 97 % of its rounds on its own states; plays of the
# baselines' proposals are recorded too, but their savings did not carry over to held-out slices).
cands=keep,learned-greedy
# plays STUDENT GATE FILE-SUFFIX SLICE...: the lookahead's plays on each slice under STUDENT.
plays() {
  local student=$1 gate=$2 suffix=$3
  shift 3
  for s in "$@"; do
    IFS=: read -r trace cluster skip take seed <<< "$s"
    $coda distil plays --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
      --seed "$seed" --skip-unplaceable --student "$student" ${gate:+--distilled-gate "$gate"} \
      --rounds 1500 --out "$out/$trace-$skip-$suffix.jsonl"
  done
}
files() {
  local suffix=$1 f=()
  for s in $slices; do IFS=: read -r trace _ skip _ _ <<< "$s"; f+=("$out/$trace-$skip-$suffix.jsonl"); done
  (IFS=,; echo "${f[*]}")
}
echo "== 1. plays on the rounds learned visits"
plays learned "" learned $slices $holdout
IFS=: read -r ht _ hs _ _ <<< "$holdout"
echo "== 2. first gate, then DAgger: the rounds each gate's policy visits, played, and a gate refitted to every play"
fit() {
  $coda distil fit --plays "$1" --holdout "$out/$ht-$hs-learned.jsonl" --candidates "$cands" --out "$2" ${3:+--table "$3"}
}
all=$(files learned)
fit "$all" "$out/gate0.json"
iters=${DAGGER_ROUNDS:-3}
for i in $(seq 1 "$iters"); do
  plays distilled "$out/gate$((i - 1)).json" "dagger$i" $slices
  all="$all,$(files "dagger$i")"
  if [ "$i" -lt "$iters" ]; then fit "$all" "$out/gate$i.json"; fi
done
echo "== 3. the final gate on every play"
fit "$all" models/distilled.json benches/results/lookahead/gate_fit.csv
