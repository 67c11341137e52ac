#!/usr/bin/env python3
"""The lookahead benchmark's tables (scripts/bench_lookahead.sh): reads runs.csv and the
bound-*.json files in the folder given, writes there lookahead.csv — per slice and seed the lower
bound, the best baseline, learned and the lookahead at its defaults (average JCT of the tracked
jobs in hours, ratios, the share of JCT above the bound, wall times) — and variants.csv, every
lookahead run with its ratio to learned, restarts, cost per round and what it kept. `coda report`
renders both."""
import csv
import json
import pathlib
import re
import sys

BASELINES = {"fifo", "srtf", "drf", "tiresias", "optimus", "sjf-bco", "pollux", "synergy-tune"}


def main(folder):
    root = pathlib.Path(folder)
    rows = list(csv.DictReader(open(root / "runs.csv")))
    keys = []
    for r in rows:
        key = (r["trace"], r["cluster"], r["skip"], r["take"], r["seed"])
        if key not in keys:
            keys.append(key)
    table, variants = [], []
    for key in keys:
        trace, cluster, skip, take, seed = key
        runs = [r for r in rows if (r["trace"], r["cluster"], r["skip"], r["take"], r["seed"]) == key]
        bound = json.loads(
            (root / f"bound-{trace}-{cluster}-{skip}-{take}-s{seed}.json").read_text())["avg_jct_s"]
        base = [r for r in runs if r["policy"] in BASELINES and int(r["jobs_unfinished"]) == 0]
        best = min(base, key=lambda r: float(r["avg_jct_s"]))
        learned = next((r for r in runs if r["policy"] == "learned"), None)
        look = next((r for r in runs if r["policy"] == "lookahead" and r["variant"] == "default"), None)
        if learned is None or look is None:
            continue  # a slice still running
        b, l, k = (float(x["avg_jct_s"]) for x in (best, learned, look))
        table.append({
            "trace": trace, "cluster": cluster, "skip": skip, "take": take, "seed": seed,
            "bound_h": bound / 3600, "best_baseline": best["policy"], "best_baseline_h": b / 3600,
            "learned_h": l / 3600, "lookahead_h": k / 3600,
            "lookahead_over_learned": k / l, "lookahead_over_best_baseline": k / b,
            "best_baseline_above_bound": (b - bound) / b, "learned_above_bound": (l - bound) / l,
            "lookahead_above_bound": (k - bound) / k,
            "learned_wall_s": float(learned["wall_s"]), "lookahead_wall_s": float(look["wall_s"]),
            "lookahead_unfinished": look["jobs_unfinished"],
        })
        for r in runs:
            if r["policy"] != "lookahead":
                continue
            notes = r["notes"]
            per_round = re.search(r"([0-9.]+) s a round", notes)
            kept = re.search(r"kept: ([^;]+);", notes)
            variants.append({
                "trace": trace, "cluster": cluster, "skip": skip, "take": take, "seed": seed,
                "variant": r["variant"], "avg_jct_h": float(r["avg_jct_s"]) / 3600,
                "over_learned": float(r["avg_jct_s"]) / l, "restarts": r["restarts"],
                "wall_s": float(r["wall_s"]),
                "s_per_round_played": per_round.group(1) if per_round else "",
                "kept": kept.group(1) if kept else "",
            })
    for name, out in (("lookahead.csv", table), ("variants.csv", variants)):
        with open(root / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0]))
            w.writeheader()
            w.writerows(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benches/results/lookahead")
