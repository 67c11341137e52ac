#!/usr/bin/env bash
# The Python package's measurements, into benches/results/python/ (`coda report` renders them):
# the wheel's build time (fresh target folder, then after a one-file change), the environment
# stepped by coda's learned policy against `coda simulate` on the same jobs, and Ray with 1 and
# 2 local workers (and a two-node local cluster) on labelling and rollouts, outputs compared;
# labelling against worker processes; MaskablePPO on the environment (with CODA_SB3_PY).
# Run after scripts/setup_python.sh, on a quiet machine (every timing is wall-clock).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
. scripts/env.sh
out=benches/results/python
mkdir -p "$out"
py=.venv-py/bin/python
export PATH="$(pwd)/.venv-py/bin:$PATH"
cargo build --release --locked -q
cp target/release/coda /tmp/coda-bench-py
# CODA_KEEP_WHEEL=1 keeps wheel.csv (7 minutes to remake) and says so in machine.txt.
runs="one run at a time"
[ -n "${CODA_KEEP_WHEEL:-}" ] && runs="$runs; wheel.csv kept from commit ${CODA_KEEP_WHEEL}"
machine_txt "$out" "bash scripts/bench_python.sh" "$runs"

# 1. The wheel: from nothing (HiGHS and every crate compiled), then after touching the bindings.
if [ -z "${CODA_KEEP_WHEEL:-}" ]; then
tmp=$(mktemp -d)
s=$(date +%s)
CARGO_TARGET_DIR=$tmp maturin build --release --locked -o "$tmp/w" > /dev/null 2>&1
fresh=$(( $(date +%s) - s ))
touch python/src/lib.rs
s=$(date +%s)
CARGO_TARGET_DIR=$tmp maturin build --release --locked -o "$tmp/w" > /dev/null 2>&1
again=$(( $(date +%s) - s ))
size=$(stat -c %s "$tmp"/w/*.whl)
rm -rf "$tmp"
{ echo "build,wall_s,wheel_bytes"; printf "fresh target folder,%s,%s\none file changed,%s,%s\n" "$fresh" "$size" "$again" "$size"; } > "$out/wheel.csv"
fi

# 2. The environment against `coda simulate` (learned policy, greedy decoding, same jobs).
rm -f "$out/env_vs_cli.csv"
$py examples/python/learned_through_env.py --trace philly --cluster 4x8 --take 300 --cli /tmp/coda-bench-py --csv "$out/env_vs_cli.csv"
$py examples/python/learned_through_env.py --trace philly --whole --slots 1024 --cli /tmp/coda-bench-py --csv "$out/env_vs_cli.csv"

# 3. Ray: 1 and 2 local workers, then a local cluster of two one-CPU nodes.
ray_csv="$out/ray.csv"
echo "work,ray,workers,tasks,wall_s,speedup,output_same_as_first" > "$ray_csv"
lab=(label --sizes 3x6,4x8 --rounds 12 --seed 11 --node-limit 200 --time-limit 1000)
rol=(rollouts --cluster 4x8 --take 1200 --length 300 --episodes 4 --seeds 4)
strip() { $py -c "import json,sys; [print(json.dumps({k: v for k, v in json.loads(l).items() if k != 'solve_s'}, sort_keys=True)) for l in open(sys.argv[1])]" "$1"; }
run() {  # work, ray description, workers, first output, output, command...
  local work=$1 what=$2 w=$3 first=$4 file=$5; shift 5
  rm -f "$file"
  local r; r=$($py -m coda.distributed "$@" --out "$file" | tail -1)
  local wall; wall=$(echo "$r" | $py -c "import json,sys; print(round(json.load(sys.stdin)['wall_s'], 2))")
  local tasks; tasks=$(echo "$r" | $py -c "import json,sys; d=json.load(sys.stdin); print(d.get('rounds', d.get('episodes')))")
  local same=first
  if [ "$file" != "$first" ]; then
    if [ "$work" = label ]; then cmp -s <(strip "$first") <(strip "$file") && same=yes || same=NO
    else cmp -s "$first" "$file" && same=yes || same=NO; fi
  fi
  echo "$work,$what,$w,$tasks,$wall,,$same" >> "$ray_csv"
}
d=$(mktemp -d)
run label "local" 1 "$d/l1" "$d/l1" --workers 1 "${lab[@]}"
run label "local" 2 "$d/l1" "$d/l2" --workers 2 "${lab[@]}"
run rollouts "local" 1 "$d/r1" "$d/r1" --workers 1 "${rol[@]}"
run rollouts "local" 2 "$d/r1" "$d/r2" --workers 2 "${rol[@]}"
# Two nodes started with `ray start`, authenticated by their own token in $d/ray (never ~/.ray).
$py -m coda.raycluster up --dir "$d/ray" --nodes 2 --cpus 1 > /dev/null
trap '$py -m coda.raycluster down --dir "$d/ray"' EXIT
( . "$d/ray/env.sh"
  run label "two nodes x 1 CPU" 2 "$d/l1" "$d/l3" --address "$CODA_RAY_ADDRESS" "${lab[@]}"
  run rollouts "two nodes x 1 CPU" 2 "$d/r1" "$d/r3" --address "$CODA_RAY_ADDRESS" "${rol[@]}" )
$py -m coda.raycluster down --dir "$d/ray"
trap - EXIT
rm -rf "$d"
# Speed-up against the 1-worker run of the same work.
$py - "$ray_csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
base = {r["work"]: float(r["wall_s"]) for r in rows if r["workers"] == "1"}
for r in rows:
    r["speedup"] = f"{base[r['work']] / float(r['wall_s']):.2f}"
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=rows[0].keys(), lineterminator="\n")
    w.writeheader(); w.writerows(rows)
PY
# 4. Labelling against worker processes (what a Ray node of that many cores gives).
rm -f "$out/label_scaling.csv"
$py benches/python/label_scaling.py --workers 1,2 --rounds 8 --csv "$out/label_scaling.csv"

# 5. MaskablePPO for three minutes, with a Python that has sb3-contrib (and PyTorch) and the
# coda wheel: CODA_SB3_PY=/path/to/python (skipped without it).
if [ -n "${CODA_SB3_PY:-}" ]; then
  "$CODA_SB3_PY" examples/python/maskable_ppo.py --minutes 3 --device cpu --out "$out/ppo" | tail -3
fi
cat "$out"/*.csv
