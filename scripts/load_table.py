#!/usr/bin/env python3
"""The load sweep's table (scripts/bench_load.sh): reads every comparison folder's
comparison.csv and bound.json under the folder given, writes load_sweep.csv there (`coda report`
renders it). Per trace and cluster: the lower bound, the best baseline, learned and learned-rl (average
JCT, hours), the queueing share of the best baseline's JCT, and the share of each policy's
average JCT above the bound ((JCT - bound) / JCT)."""
import csv
import json
import pathlib
import sys

LEARNED = ("learned", "learned-rl")

def main(folder):
    root = pathlib.Path(folder)
    rows = []
    for d in sorted(p for p in root.iterdir() if (p / "comparison.csv").exists()):
        bound = json.loads((d / "bound.json").read_text())
        runs = {r["policy"]: r for r in csv.DictReader(open(d / "comparison.csv"))}
        base = {p: r for p, r in runs.items() if p not in LEARNED and int(r["jobs_unfinished"]) == 0}
        best = min(base, key=lambda p: float(base[p]["avg_jct_s"]))
        b = bound["avg_jct_s"]
        row = {
            "trace": bound["trace"],
            "cluster": bound["cluster"],
            "gpus": bound["gpus"],
            "jobs_tracked": bound["jobs_tracked"],
            "bound_h": b / 3600,
            "bound_alone_h": bound["bounds"]["alone"] / 3600,
            "bound_capacity_h": bound["bounds"]["capacity"] / 3600,
            "bound_lp_h": bound["bounds"].get("lp", float("nan")) / 3600,
            "bound_lp_period_s": bound["bounds"].get("lp_period_s", float("nan")),
            "best_baseline": best,
            "best_baseline_h": float(base[best]["avg_jct_s"]) / 3600,
            "best_baseline_queueing_share": float(base[best]["avg_queueing_s"]) / float(base[best]["avg_jct_s"]),
        }
        for p in LEARNED:
            row[f"{p}_h"] = float(runs[p]["avg_jct_s"]) / 3600 if p in runs else float("nan")
            row[f"{p}_unfinished"] = int(runs[p]["jobs_unfinished"]) if p in runs else -1
        for p in ("best_baseline",) + LEARNED:
            jct = row[f"{p}_h"]
            row[f"{p}_above_bound"] = (jct - row["bound_h"]) / jct
        rows.append(row)
    with open(root / "load_sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benches/results/load")
