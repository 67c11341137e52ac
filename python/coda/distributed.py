"""coda's heavy batch work on Ray: ``python -m coda.distributed label|rollouts|sweep ...``.

* ``label`` — ``coda label``'s generated rounds, one Ray task per chunk of rounds, appended to
  the labels file (JSON lines) in the spec's order: the same lines ``coda label`` writes, byte
  for byte but for ``solve_s`` (each solve's wall time; give ``--node-limit`` and a time limit
  that does not bind for repeatable labels, as with ``coda label``). Resumable: rounds already
  in the file are skipped, a line cut short by an interrupted run is dropped.
* ``rollouts`` — episodes of the current weights (``coda train rl``'s rollouts: windows of a
  trace, sampled from level 1's and level 2's distributions), one task per (window, seed), one
  CSV row each in a fixed order; resumable. ``--local`` runs the same in this process: the
  reference the Ray run equals.
* ``sweep`` — ``coda compare`` over a grid of traces × seeds (× the values of one simulate
  option with ``--vary``, e.g. ``restart_s=30,60,120``: a sensitivity grid over the simulator's
  settings), one task per (cell, policy); each cell's ``comparison.csv`` is ``coda compare``'s
  with the same options but for the two wall-time columns (``wall_s``, ``events_per_s``).
  Resumable: finished runs are kept as JSON. The performance model's estimates are varied by
  ``coda sensitivity`` on one machine (it re-fits the model per setting); not sharded here.

``ray.init()`` starts a local Ray by default (``--workers`` CPUs), authenticated by a fresh token
in a temporary folder (never ``~/.ray``: :mod:`coda.raycluster`); ``--address`` joins a cluster
(``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on others), with its token
from ``--token-file`` or the environment (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN_PATH``). Every
task runs one round, episode or replay on one core (HiGHS and the simulator single-threaded), so
the speed-up is the number of cores Ray offers, up to the number of tasks.
"""

from __future__ import annotations

import argparse
import atexit
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Iterable, Optional

from . import _native, raycluster


def _ordered(tasks: list, submit: Callable[[Any], Any], write: Callable[[Any, Any], None],
             get: Callable, wait: Optional[Callable]) -> None:
    """Submits every task and writes results in task order as soon as all before are done."""
    if wait is None:  # in this process: each result written as soon as it is made
        for t in tasks:
            write(t, submit(t))
        return
    refs = [submit(t) for t in tasks]
    index = {r: i for i, r in enumerate(refs)}
    results: dict[int, Any] = {}
    pending, nxt = list(refs), 0
    while pending:
        ready, pending = wait(pending, num_returns=1)
        for r in ready:
            results[index[r]] = get(r)
        while nxt in results:
            write(tasks[nxt], results.pop(nxt))
            nxt += 1


def _ray(args):
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        return sys.modules["ray"]
    if args.address:
        if args.token_file:
            raycluster.use_credentials({"RAY_AUTH_MODE": "token",
                                        "RAY_AUTH_TOKEN_PATH": os.path.abspath(args.token_file)})
        import ray

        try:
            ray.init(address=args.address, log_to_driver=False)
        except (ray.exceptions.AuthenticationError, ConnectionError) as e:
            hint = "" if raycluster.has_token() else (
                "; a cluster started with `ray start` (token authentication) needs its token: "
                "pass --token-file (the file its nodes were given as RAY_AUTH_TOKEN_PATH)")
            raise SystemExit(f"error: could not join the Ray cluster at {args.address}: "
                             f"{type(e).__name__}: {e}{hint}") from None
    else:
        # A local cluster of this process's own: a fresh token in a temporary folder, not the
        # one ray.init() would otherwise make and save into ~/.ray.
        if os.environ.get("RAY_AUTH_MODE", "token").lower() == "token" and not raycluster.has_token():
            folder = tempfile.mkdtemp(prefix="coda-ray-")
            atexit.register(shutil.rmtree, folder, True)
            raycluster.use_credentials(raycluster.credentials(folder))
        import ray

        # "local": a new instance even when a cluster started by `ray start` runs on this
        # machine (ray.init() would join that one, and refuse num_cpus).
        ray.init(address="local", num_cpus=args.workers, include_dashboard=False,
                 log_to_driver=False)
        atexit.register(ray.shutdown)
    return ray


def _runner(args, fn):
    """(submit, get, wait) running `fn(*task)` as Ray tasks, or in this process with --local."""
    if args.local:
        return (lambda t: fn(*t)), None, None
    ray = _ray(args)
    remote = ray.remote(num_cpus=1)(fn)
    return (lambda t: remote.remote(*t)), ray.get, ray.wait


def _label_chunk(spec: str, ids: list[str]) -> list[str]:
    return _native.label(spec, ids)


def label(args) -> dict:
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    spec = json.dumps({
        "sizes": sizes, "rounds": args.rounds, "seed": args.seed,
        "running_fraction": args.running_fraction, "time_limit": args.time_limit,
        "node_limit": args.node_limit, "work_limit": args.work_limit,
    })
    ids = _native.label_ids(spec)
    done = set(_native.resume(args.out))  # coda label's own resume
    todo = [i for i in ids if i not in done]
    chunks = [todo[i:i + args.chunk] for i in range(0, len(todo), args.chunk)]
    submit, get, wait = _runner(args, _label_chunk)
    t0 = time.perf_counter()
    with open(args.out, "a", encoding="utf-8") as f:
        def write(_, lines):
            f.write("".join(lines))
            f.flush()
        _ordered([(spec, c) for c in chunks], submit, write, get, wait)
    return {"rounds": len(todo), "skipped": len(ids) - len(todo),
            "wall_s": time.perf_counter() - t0}


ROLLOUT_COLUMNS = ["episode", "seed", "avg_jct_h", "finished", "jobs", "rounds", "return"]


def _rollout(spec: str, start: int, length: int, seed: int, temperature: float,
             weights: Optional[str]) -> dict:
    return json.loads(_native.rollout_episode(spec, start, length, seed, temperature, False,
                                              weights))


def rollouts(args) -> dict:
    spec = json.dumps({k: v for k, v in {
        "trace": args.trace, "cluster": args.cluster, "take": args.take,
        "seed": args.trace_seed, "cpu_mem": "fixed",
    }.items() if v is not None})
    tasks = [(spec, start, args.length, seed, args.temperature, args.weights)
             for start in range(0, args.episodes * args.length, args.length)
             for seed in range(args.seed, args.seed + args.seeds)]
    have = set()
    if os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            have = {(r["episode"], r["seed"]) for r in csv.DictReader(f)}
    new = not os.path.exists(args.out)
    submit, get, wait = _runner(args, _rollout)
    t0 = time.perf_counter()
    written = 0
    with open(args.out, "a", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ROLLOUT_COLUMNS, lineterminator="\n")
        if new:
            w.writeheader()

        def write(_, row):
            nonlocal written
            w.writerow({k: row[k] for k in ROLLOUT_COLUMNS})
            written += 1
            f.flush()
        todo = [t for t in tasks if not _have_rollout(have, t)]
        _ordered(todo, submit, write, get, wait)
    return {"episodes": written, "wall_s": time.perf_counter() - t0}


def _have_rollout(have: set, task: tuple) -> bool:
    _, start, length, seed, _, _ = task
    return any(e.endswith(f"[{start}..{start + length}]") and s == str(seed) for e, s in have)


def _simulate(spec: str, policy: str) -> str:
    return _native.simulate(spec, policy)


def _value(text: str):
    """A `--vary` value as JSON (numbers, true/false) or else as text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def sweep(args) -> dict:
    policies = args.policies.split(",")
    vary_key, vary_values = None, [None]
    if args.vary:
        vary_key, _, values = args.vary.partition("=")
        vary_values = [_value(v) for v in values.split(",")]
    cells = [(t, int(s), v) for t in args.traces.split(",") for s in args.seeds.split(",")
             for v in vary_values]
    tasks, paths = [], []
    for trace, seed, value in cells:
        d = os.path.join(args.out, _cell(trace, seed, vary_key, value))
        os.makedirs(d, exist_ok=True)
        opts = {"trace": trace, "seed": seed, "cluster": args.cluster, "take": args.take}
        if vary_key:
            opts[vary_key] = value
        spec = json.dumps({k: v for k, v in opts.items() if v is not None})
        for p in policies:
            path = os.path.join(d, f"{p}.json")
            if not os.path.exists(path):
                tasks.append((spec, p))
                paths.append(path)
    submit, get, wait = _runner(args, _simulate)
    t0 = time.perf_counter()

    def write(task, result):
        path = paths[tasks.index(task)]
        summary = json.loads(result)
        summary.pop("jobs")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(summary, f)
        os.replace(tmp, path)
    _ordered(tasks, submit, write, get, wait)
    for trace, seed, value in cells:
        d = os.path.join(args.out, _cell(trace, seed, vary_key, value))
        runs = []
        for p in policies:
            with open(os.path.join(d, f"{p}.json"), encoding="utf-8") as f:
                runs.append(json.load(f))
        with open(os.path.join(d, "comparison.csv"), "w", encoding="utf-8") as f:
            f.write(_native.comparison_csv([json.dumps(r) for r in runs]))
    return {"runs": len(tasks), "wall_s": time.perf_counter() - t0}


def _cell(trace: str, seed: int, key: Optional[str], value) -> str:
    return f"{trace}-seed{seed}" + (f"-{key}={value}" if key else "")


def main(argv: Optional[Iterable[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coda.distributed", description=__doc__.split("\n")[0])
    ap.add_argument("--address", help="join this Ray cluster (default: start a local one)")
    ap.add_argument("--token-file", help="with --address: the cluster's token file (what its "
                    "nodes were given as RAY_AUTH_TOKEN_PATH)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(),
                    help="CPUs of the local Ray (default: every core)")
    ap.add_argument("--local", action="store_true", help="no Ray: run in this process")
    sub = ap.add_subparsers(dest="cmd", required=True)

    lb = sub.add_parser("label", help="coda label's generated rounds, sharded")
    lb.add_argument("--sizes", default="2x4,3x6,4x8")
    lb.add_argument("--rounds", type=int, default=10)
    lb.add_argument("--seed", type=int, default=0)
    lb.add_argument("--running-fraction", type=float, default=0.3)
    lb.add_argument("--time-limit", type=float, default=10.0)
    lb.add_argument("--node-limit", type=int)
    lb.add_argument("--work-limit", type=int)
    lb.add_argument("--chunk", type=int, default=1, help="rounds per task")
    lb.add_argument("--out", default="labels.jsonl")

    ro = sub.add_parser("rollouts", help="episodes of the learned policy, sharded")
    ro.add_argument("--trace", default="philly")
    ro.add_argument("--cluster", default="4x8")
    ro.add_argument("--take", type=int, help="jobs of the trace loaded (default: all)")
    ro.add_argument("--trace-seed", type=int, default=0)
    ro.add_argument("--length", type=int, default=50, help="jobs per episode")
    ro.add_argument("--episodes", type=int, default=4, help="windows, one after another")
    ro.add_argument("--seeds", type=int, default=2, help="sampled rollouts per window")
    ro.add_argument("--seed", type=int, default=0, help="first sampling seed")
    ro.add_argument("--temperature", type=float, default=1.0)
    ro.add_argument("--weights", help="safetensors weights (default: the shipped ones)")
    ro.add_argument("--out", default="rollouts.csv")

    sw = sub.add_parser("sweep", help="coda compare over traces x seeds, sharded")
    sw.add_argument("--traces", default="philly")
    sw.add_argument("--seeds", default="0")
    sw.add_argument("--policies", default="fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random")
    sw.add_argument("--cluster")
    sw.add_argument("--take", type=int)
    sw.add_argument("--vary", help="one simulate option over values, e.g. restart_s=30,60,120 "
                    "(a cell per value)")
    sw.add_argument("--out", default="out/sweep")

    args = ap.parse_args(argv)
    try:
        result = {"label": label, "rollouts": rollouts, "sweep": sweep}[args.cmd](args)
    except _native.CodaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
