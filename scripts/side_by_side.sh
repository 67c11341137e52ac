#!/usr/bin/env bash
# Side by side (set-up included): replays a trace with every contention estimate off on
# GPU-only servers (the default servers' GPUs and topology, cores and memory that never bind, as
# a GPU-only simulator such as Blox models them) under the policies that never move a job, and
# checks every job against a second, independently written replay rule: a job that never moves
# runs exactly its trace duration, finishing at the first round boundary at or after
# `first start + duration` on a round-based simulator. Every job that ran packed must match (exit 1
# otherwise); the table reports the share of all jobs within one round, and how far spread jobs
# are. Writes side_by_side.{csv,md} under benches/results/side_by_side/ (or $1).
# Usage: scripts/side_by_side.sh [OUT] [TRACE] [POLICIES]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked
coda=${CODA_BIN:-target/release/coda}
out=${1:-benches/results/side_by_side}
trace=${2:-philly}
policies=${3:-fifo,sjf-bco}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Contention off: no co-location, PCIe or NIC sharing, no cross-socket factor.
python3 - "$tmp/off.json" <<'PY'
import json, sys
p = json.load(open("models/perf_params.json"))
p["estimates"].update(colocation_coupling=0.0, pcie_share_comm_penalty=0.0,
                      cross_socket_comm_factor=1.0, nic_bandwidth_fraction=0.0)
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
# GPU-only servers: the trace's default cluster with cores and memory that never bind.
case "$trace" in
  philly) servers=64; server=dgx-1-v100 ;;
  itp-cluster02|itp-cluster06) servers=16; server=nd40rs-v2 ;;
  *) echo "side_by_side: trace must be philly, itp-cluster02 or itp-cluster06" >&2; exit 2 ;;
esac
python3 - "$tmp/cluster.json" "$servers" "$server" <<'PY'
import csv, json, sys
path, n, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = {r["name"]: r for r in csv.DictReader(open("datasets/servers.csv"))}[name]
server = {
    "gpu_type": r["gpu_type"],
    "topology": [[int(r["gpus_per_switch"])] * int(r["switches_per_socket"])] * int(r["sockets"]),
    "cpu_cores": 1e6, "memory_gib": 1e9, "nic_gbps": float(r["nic_gbps"]),
    "nvlink": r["gpu_link"] == "nvlink",
}
json.dump({"servers": [dict(server, name=f"gpu-only-{i:03}") for i in range(n)]}, open(path, "w"))
PY
for p in ${policies//,/ }; do
  $coda --params "$tmp/off.json" simulate --trace "$trace" --cluster "$tmp/cluster.json" \
    --policy "$p" --quiet --out "$tmp/$p" > /dev/null
done
$coda trace --trace "$trace" --out "$tmp/jobs.json" > /dev/null
python3 - "$tmp" "$out" "$trace" "$policies" <<'PY'
import csv, json, math, sys
tmp, out, trace, policies = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
# The independent rule reads the trace file itself (durations, GPU counts), never coda's
# speeds: rows in arrival order, stable on file order, are coda's jobs 0..n-1.
if trace == "philly":
    src = [(float(r["submit_offset_s"]), float(r["duration"]), int(r["num_gpus"]))
           for r in csv.DictReader(open("datasets/philly_2017_pollux_window_4d.csv"))]
else:
    group = trace.removeprefix("itp-")
    src = [(float(r["submission_time"]), float(r["duration"]), int(r["num_gpu"]))
           for r in csv.DictReader(open("datasets/msr_itp_2021_clusters02_06.csv"))
           if r["cluster"] == group]
src.sort(key=lambda r: r[0])
first = src[0][0]
coda_jobs = json.load(open(f"{tmp}/jobs.json"))
assert len(coda_jobs) == len(src), (len(coda_jobs), len(src))
for j, (t, _, _) in zip(coda_jobs, src):
    assert abs(j["arrival_s"] - (t - first)) < 1e-6, (j["id"], j["arrival_s"], t - first)
cluster = json.load(open(f"{tmp}/cluster.json"))
per_server = sum(sum(s) for s in cluster["servers"][0]["topology"])
round_s = 300.0
rows, summary = [], []
for p in policies:
    recs = {int(r["id"]): r for r in csv.DictReader(open(f"{tmp}/{p}/jobs.csv"))}
    n = matched = within = packed_n = packed_ok = 0
    spread_ratios = []
    for i, (_, duration, _) in enumerate(src):
        r = recs[coda_jobs[i]["id"]]
        if not r["finish_s"] or int(r["restarts"]) != 0:
            continue
        start, finish = float(r["first_start_s"]), float(r["finish_s"])
        gpus, servers = int(r["max_gpus"]), int(r["max_servers"])
        packed = servers == math.ceil(gpus / per_server)
        # A round-based replay: the job ends at the first round boundary at or after
        # start + duration; coda's event-driven finish is put on the same grid.
        grid = lambda t: math.ceil(round(t / round_s, 6)) * round_s
        rule = grid(start + duration)
        ours = grid(finish)
        ok = abs(ours - rule) < 1e-6
        n += 1
        matched += ok
        within += abs(finish - (start + duration)) <= round_s
        packed_n += packed
        packed_ok += packed and ok
        if not packed:
            spread_ratios.append((finish - start) / duration)
        rows.append([p, i, gpus, servers, int(packed), start, duration, finish - start,
                     rule, ours, int(ok)])
    spread_ratios.sort()
    med = spread_ratios[len(spread_ratios) // 2] if spread_ratios else float("nan")
    summary.append((p, n, packed_n, packed_ok, matched, within, len(spread_ratios),
                    spread_ratios[0] if spread_ratios else float("nan"), med,
                    spread_ratios[-1] if spread_ratios else float("nan")))
with open(f"{out}/side_by_side.csv", "w") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["policy", "job", "gpus", "servers", "packed", "first_start_s",
                "trace_duration_s", "coda_run_s", "rule_finish_grid_s", "coda_finish_grid_s",
                "match"])
    w.writerows(rows)
with open(f"{out}/side_by_side.md", "w") as f:
    f.write(f"Trace `{trace}`, contention off, GPU-only servers ({per_server} GPUs each), "
            f"{round_s:.0f} s rounds; jobs that finished without a restart. "
            "Rule: a job that never moves runs its trace duration (finish on the round grid).\n\n")
    f.write("| policy | jobs | packed | packed matching | all matching | within one round | "
            "spread jobs | spread run ÷ duration (min / median / max) |\n|---|---|---|---|---|---|---|---|\n")
    for p, n, pn, pok, m, wi, sn, lo, md, hi in summary:
        f.write(f"| {p} | {n} | {pn} | {pok} ({100 * pok / max(pn, 1):.1f} %) | "
                f"{m} ({100 * m / max(n, 1):.1f} %) | {wi} ({100 * wi / max(n, 1):.1f} %) | "
                f"{sn} | {lo:.3f} / {md:.3f} / {hi:.3f} |\n")
print(open(f"{out}/side_by_side.md").read())
bad = [s for s in summary if s[3] != s[2]]
if bad:
    sys.exit(f"side by side: packed jobs that do not match the rule: {bad}")
PY
