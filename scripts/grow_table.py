#!/usr/bin/env python3
"""The local search's table (scripts/bench_grow.sh): per goodput setting, trace and cluster, the
learned policy's average JCT, restarts and replay wall time without the search (the load
sweep's row) and with it (grow/<goodput>/<name>/comparison.csv), and their ratio. Writes
grow.csv and grow.md in the folder given."""
import csv
import pathlib
import sys

SWEEPS = {"off": "load", "on": "load-goodput"}


def learned_row(path):
    return next(r for r in csv.DictReader(open(path)) if r["policy"] == "learned")


def main(folder):
    root = pathlib.Path(folder)
    rows = []
    for goodput, sweep in SWEEPS.items():
        for d in sorted((root / goodput).glob("*/comparison.csv")):
            name = d.parent.name
            base = root.parent / sweep / name / "comparison.csv"
            if not base.exists():
                continue
            off, on = learned_row(base), learned_row(d)
            rows.append({
                "goodput": goodput,
                "trace": on["trace"],
                "cluster": on["cluster"],
                "gpus": on["gpus"],
                "learned_h": float(off["avg_jct_s"]) / 3600,
                "grow_h": float(on["avg_jct_s"]) / 3600,
                "ratio": float(on["avg_jct_s"]) / float(off["avg_jct_s"]),
                "learned_restarts": off["restarts"],
                "grow_restarts": on["restarts"],
                "learned_unfinished": off["jobs_unfinished"],
                "grow_unfinished": on["jobs_unfinished"],
                "learned_wall_s": float(off["wall_s"]),
                "grow_wall_s": float(on["wall_s"]),
            })
    with open(root / "grow.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    lines = ["| goodput | trace | cluster | GPUs | learned avg JCT (h) | with the search (h) | ratio "
             "| restarts | with the search | replay wall (s) | with the search |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['goodput']} | {r['trace']} | {r['cluster']} | {r['gpus']} "
                     f"| {r['learned_h']:.2f} | {r['grow_h']:.2f} | {r['ratio']:.3f} "
                     f"| {r['learned_restarts']} | {r['grow_restarts']} "
                     f"| {r['learned_wall_s']:.0f} | {r['grow_wall_s']:.0f} |")
    (root / "grow.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benches/results/grow")
