"""Labelling throughput against worker processes on one machine: what a Ray worker node with
that many cores gives `python -m coda.distributed label` (each Ray task is one round on one core,
as each process here is). Rounds of `coda label`'s spec, repeatable (node limit, a time limit
that does not bind); every configuration labels the same rounds and must write the same lines
(solve times aside).

    python benches/python/label_scaling.py --workers 1,2 --csv out/label_scaling.csv
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import time

from coda import _native

SPEC = {"sizes": [[3, 6], [4, 8]], "rounds": 8, "seed": 11, "running_fraction": 0.3,
        "time_limit": 1000.0, "node_limit": 200}


def one(i: str) -> str:
    return _native.label(json.dumps(SPEC), [i])[0]


def strip(line: str) -> dict:
    d = json.loads(line)
    d.pop("solve_s")
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=8, help="rounds per size")
    ap.add_argument("--csv")
    a = ap.parse_args()
    SPEC["rounds"] = a.rounds
    ids = _native.label_ids(json.dumps(SPEC))
    rows, ref = [], None
    for w in [int(x) for x in a.workers.split(",")]:
        t0 = time.perf_counter()
        with mp.get_context("fork").Pool(w) as pool:
            lines = pool.map(one, ids, chunksize=1)
        wall = time.perf_counter() - t0
        got = [strip(x) for x in lines]
        ref = ref or got
        same = got == ref
        rows.append((w, len(ids), wall, same))
        print(f"{w} workers: {len(ids)} rounds in {wall:.1f} s "
              f"(x{rows[0][2] / wall:.2f} of 1 worker), same labels: {same}", flush=True)
    if a.csv:
        machine = f"{platform.system()} {platform.machine()} {os.cpu_count()} cores"
        new = not os.path.exists(a.csv)
        with open(a.csv, "a", encoding="utf-8") as f:
            if new:
                f.write("machine,workers,rounds,wall_s,speedup,same_labels\n")
            for w, n, wall, same in rows:
                f.write(f"{machine},{w},{n},{wall:.2f},{rows[0][2] / wall:.3f},{same}\n")


if __name__ == "__main__":
    main()
