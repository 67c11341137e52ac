#!/usr/bin/env bash
# The distilled policy against `learned` and the lookahead, on two sets of slices the gate never
# saw: the lookahead's own (SLICES, as in bench_lookahead.sh, whose lookahead.csv gives the
# lookahead's JCT) and OTHER_SLICES (other jobs of ITP cluster 02 and Philly; the lookahead,
# default settings, replayed here). Per slice and seed (SEEDS), `learned` and `distilled`
# replayed one after the other on this machine (their walls comparable). Rows go to
# benches/results/lookahead/distilled.csv (a rerun replaces the rows of the slices and seeds it
# replays, keeps the others); then, unless SENSITIVITY=0, the sensitivity of both to every
# named estimate on two slices (distilled-sensitivity/). `coda report` renders both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=benches/results/lookahead
slices=${SLICES-"itp-cluster06:8xnd40rs-v2:0:300 itp-cluster06:8xnd40rs-v2:600:300 philly:4xdgx-1-v100:2000:400 philly:4xdgx-1-v100:3000:400"}
other=${OTHER_SLICES-"itp-cluster02:8xnd40rs-v2:2000:300 itp-cluster02:8xnd40rs-v2:3000:300 philly:4xdgx-1-v100:1500:300 philly:4xdgx-1-v100:1800:300"}
seeds=${SEEDS:-"0 1 2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows.csv"
: > "$rows"
# replay SET POLICIES SLICE...: one row per slice and seed.
replay() {
  local set=$1 policies=$2
  shift 2
  for s in "$@"; do
    IFS=: read -r trace cluster skip take <<< "$s"
    for seed in $seeds; do
      echo '{}' > "$tmp/lookahead.json"
      for p in $policies; do
        $coda simulate --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
          --seed "$seed" --skip-unplaceable --policy "$p" --out "$tmp/run" --json --quiet > "$tmp/$p.json"
      done
      python3 - "$tmp" "$rows" "$set" "$trace" "$cluster" "$skip" "$take" "$seed" <<'PY'
import csv, json, sys
tmp, rows, set_ = sys.argv[1], sys.argv[2], sys.argv[3]
key = sys.argv[4:9]
m = {p: json.load(open(f"{tmp}/{p}.json")) for p in ("learned", "distilled", "lookahead")}
note = " | ".join(m["distilled"].get("policy_notes") or [])
with open(rows, "a", newline="") as f:
    csv.writer(f).writerow([set_] + key + [m["learned"]["avg_jct_s"], m["distilled"]["avg_jct_s"],
                                  m["learned"]["restarts"], m["distilled"]["restarts"],
                                  m["learned"]["wall_s"], m["distilled"]["wall_s"], note,
                                  m["lookahead"].get("avg_jct_s", "")])
PY
    done
  done
}
replay evaluation "learned distilled" $slices
replay other "learned distilled lookahead" $other
python3 - "$rows" "$out/lookahead.csv" "$out/distilled.csv" <<'PY'
import csv, os, sys
rows, la, dst = sys.argv[1:4]
ids = ("trace", "cluster", "skip", "take", "seed")
look = {tuple(r[k] for k in ids): float(r["lookahead_h"]) for r in csv.DictReader(open(la))}
head = ["set", "trace", "cluster", "skip", "take", "seed", "learned_h", "lookahead_h",
        "distilled_h", "distilled_over_learned", "gain_kept", "learned_restarts",
        "distilled_restarts", "learned_wall_s", "distilled_wall_s", "kept"]
new = {}
for r in csv.reader(open(rows)):
    key = tuple(r[1:6])
    l, d = float(r[6]) / 3600, float(r[7]) / 3600
    lk = float(r[13]) / 3600 if r[13] else look.get(key)
    kept = "" if lk is None or lk >= l else (l - d) / (l - lk)
    gate = r[12].split("kept: ")[-1] if "kept: " in r[12] else ""
    new[key] = [r[0]] + list(key) + [l, lk if lk is not None else "", d, d / l, kept, r[8],
                                     r[9], r[10], r[11], gate]
# Rows of slices and seeds not replayed now are kept as they were.
old = []
if os.path.exists(dst):
    for r in csv.DictReader(open(dst)):
        if tuple(r[k] for k in ids) not in new:
            old.append([r.get("set") or "evaluation"] + [r[k] for k in head[1:]])
with open(dst, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(head)
    # The lookahead's own slices first (a stable sort keeps each set's order).
    w.writerows(sorted(old + list(new.values()), key=lambda r: r[0] != "evaluation"))
PY
echo "wrote $out/distilled.csv"
if [ "${SENSITIVITY:-1}" = 0 ]; then exit 0; fi
# Which named estimate moves the comparison: `coda sensitivity` of learned and distilled on the
# first ITP 06 slice and the first Philly slice, seed 0 (each estimate at its low and high value).
. scripts/bench_lib.sh
sens=$out/distilled-sensitivity
mkdir -p "$sens"
machine_txt "$sens" "scripts/bench_distilled.sh (its sensitivity step)" "one setting at a time"
for s in itp-cluster06:8xnd40rs-v2:0:300 philly:4xdgx-1-v100:2000:400; do
  IFS=: read -r trace cluster skip take <<< "$s"
  $coda sensitivity --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" --seed 0 \
    --skip-unplaceable --policies learned,distilled --threads 1 --quiet \
    --out "$sens/$trace-$cluster-$skip-$take-s0" > /dev/null
done
