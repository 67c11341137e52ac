#!/usr/bin/env bash
# The distilled policy against `learned` and the lookahead on the lookahead's slices and seeds
# (scripts/bench_lookahead.sh must have written benches/results/lookahead/lookahead.csv): per
# slice and seed, `learned` and `distilled` replayed one after the other on this machine (their
# walls comparable), the lookahead's JCT read from lookahead.csv. Writes
# benches/results/lookahead/distilled.csv and, on two slices, the sensitivity of both to every
# named estimate (distilled-sensitivity/; `coda report` renders both). SEEDS and SLICES as in
# bench_lookahead.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=benches/results/lookahead
slices=${SLICES:-"itp-cluster06:8xnd40rs-v2:0:300 itp-cluster06:8xnd40rs-v2:600:300 philly:4xdgx-1-v100:2000:400 philly:4xdgx-1-v100:3000:400"}
seeds=${SEEDS:-"0 1 2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows.csv"
: > "$rows"
for s in $slices; do
  IFS=: read -r trace cluster skip take <<< "$s"
  for seed in $seeds; do
    for p in learned distilled; do
      $coda simulate --trace "$trace" --cluster "$cluster" --skip "$skip" --take "$take" \
        --seed "$seed" --skip-unplaceable --policy "$p" --out "$tmp/run" --json --quiet > "$tmp/$p.json"
    done
    python3 - "$tmp" "$rows" "$trace" "$cluster" "$skip" "$take" "$seed" <<'PY'
import csv, json, sys
tmp, rows = sys.argv[1], sys.argv[2]
key = sys.argv[3:8]
m = {p: json.load(open(f"{tmp}/{p}.json")) for p in ("learned", "distilled")}
note = " | ".join(m["distilled"].get("policy_notes") or [])
with open(rows, "a", newline="") as f:
    csv.writer(f).writerow(key + [m["learned"]["avg_jct_s"], m["distilled"]["avg_jct_s"],
                                  m["learned"]["restarts"], m["distilled"]["restarts"],
                                  m["learned"]["wall_s"], m["distilled"]["wall_s"], note])
PY
  done
done
python3 - "$rows" "$out/lookahead.csv" "$out/distilled.csv" <<'PY'
import csv, sys
rows, la, dst = sys.argv[1:4]
look = {tuple(r[k] for k in ("trace", "cluster", "skip", "take", "seed")): float(r["lookahead_h"])
        for r in csv.DictReader(open(la))}
with open(dst, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["trace", "cluster", "skip", "take", "seed", "learned_h", "lookahead_h",
                "distilled_h", "distilled_over_learned", "gain_kept", "learned_restarts",
                "distilled_restarts", "learned_wall_s", "distilled_wall_s", "kept"])
    for r in csv.reader(open(rows)):
        key = tuple(r[:5])
        l, d = float(r[5]) / 3600, float(r[6]) / 3600
        lk = look.get(key)
        kept = "" if lk is None or lk >= l else (l - d) / (l - lk)
        gate = r[11].split("kept: ")[-1] if "kept: " in r[11] else ""
        w.writerow(list(key) + [l, lk if lk is not None else "", d, d / l, kept, r[7], r[8],
                                r[9], r[10], gate])
PY
echo "wrote $out/distilled.csv"
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
