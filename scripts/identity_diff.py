#!/usr/bin/env python3
"""Compares two folders written by scripts/identity_check.sh: every CSV, JSON and JSON-lines file
must be equal but for the values that are wall-clock time (columns and keys named below); SVG
plots and Markdown tables are compared through the CSVs they are drawn from. Prints one line per
file that differs (with its first difference) and exits 1 if any does.
Usage: scripts/identity_diff.py BEFORE AFTER
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

# Wall-clock seconds, and what is derived from them.
TIMING = {"wall_s", "events_per_s", "decision_s", "expert_solve_s", "solve_s", "build_time_s",
          "wall_time_s", "build_s", "generation_s", "restricted_s", "time_s_wall"}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def load(path: Path):
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(f)]
    if path.suffix == ".jsonl":
        return [strip(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    if path.suffix == ".json":
        return strip(json.loads(path.read_text()))
    return None


def first_difference(a, b, where=""):
    if type(a) is not type(b):
        return f"{where}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'after' if k in b else 'before'}"
            d = first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def main(argv: list[str]) -> int:
    before, after = Path(argv[0]), Path(argv[1])
    files = sorted(p.relative_to(before) for p in before.rglob("*")
                   if p.is_file() and p.suffix in (".csv", ".json", ".jsonl"))
    bad = compared = 0
    for rel in files:
        other = after / rel
        if not other.exists():
            print(f"{rel}: missing in {after}")
            bad += 1
            continue
        d = first_difference(load(before / rel), load(other))
        compared += 1
        if d:
            print(f"{rel}: differs at {d}")
            bad += 1
    extra = sorted(p.relative_to(after) for p in after.rglob("*")
                   if p.is_file() and p.suffix in (".csv", ".json", ".jsonl")
                   and not (before / p.relative_to(after)).exists())
    for rel in extra:
        print(f"{rel}: only in {after}")
    print(f"identity_diff: {compared} files compared, {bad} differ, {len(extra)} new")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
