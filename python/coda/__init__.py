"""coda from Python: schedule a round, solve it exactly, replay a trace, score policies against
the exact program, and step the simulator as a Gymnasium environment (``coda.ClusterEnv``,
``gymnasium.make("coda/Cluster-v0", ...)``). ``python -m coda.distributed`` shards labelling,
rollouts and policy sweeps over Ray.

The work is done by coda's Rust library (``coda._native``); inputs and outputs are the JSON
objects the command line reads and writes, as Python dicts. Every error of coda's is a
:class:`CodaError` whose message names the file, line and field, as on the command line.

Quick start (from the repository root)::

    import coda
    snap = coda.load("examples/instances/small.json")
    sched = coda.schedule(snap, scheduler="learned")        # milliseconds, valid by construction
    exact = coda.solve(snap, time_limit=10)                 # {"schedule": ..., "report": ...}
    run = coda.simulate("philly", policy="learned", cluster="4x8", take=100)
    print(run["avg_jct_s"], len(run["jobs"]))
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Union

from . import _native
from ._native import CodaError

__all__ = [
    "CodaError",
    "ClusterEnv",
    "load",
    "load_trace",
    "schedule",
    "solve",
    "score",
    "simulate",
    "bound",
    "gap",
    "comparison_csv",
]

Snapshot = Union[Mapping[str, Any], str, "os.PathLike[str]"]


def load(path: Union[str, "os.PathLike[str]"]) -> dict:
    """Reads a snapshot, schedule or label file (JSON) into a dict."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _text(x: Snapshot, what: str) -> tuple[str, str]:
    """(JSON text, origin for error messages) of a dict, a JSON string or a file path."""
    if isinstance(x, Mapping):
        return json.dumps(x), what
    if isinstance(x, str) and x.lstrip().startswith("{"):
        return x, what
    path = os.fspath(x)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def schedule(
    snapshot: Snapshot,
    scheduler: str = "learned",
    *,
    seed: int = 0,
    samples: int = 8,
    time_limit: float = 60.0,
    goodput: bool = False,
    round_s: float = 300.0,
    restart_s: float = 60.0,
    grow: int = 0,
) -> dict:
    """Schedules one round. ``scheduler``: ``"exact"`` (the exact program on the whole round,
    back-filled, as ``coda::schedule``) or any policy of ``coda simulate --policy`` (``learned``,
    ``learned-rl``, ``drf``, ``tiresias``, ``sia``, ``ilp`` — the replay policy that solves a
    window of jobs each round —, ``lookahead`` — candidates played forward in copies of the
    simulator at its default settings, ``distilled`` — the lookahead's choice made by a gate
    fitted to its plays...). ``goodput``: price speeds as goodputs (statistical efficiency, as
    ``--goodput on``). ``round_s``, ``restart_s``: the objective's round length and the
    seconds a moved, resized or stopped job loses (the command line's ``--round-s`` and
    ``--restart-s``; the latter an estimate): a caller that schedules every 60 s passes
    ``round_s=60``, so that a restart costs what it costs then. ``grow``: learned policies end
    each round with a local search of up to this many moves on the objective (``--policy-grow``;
    0: none). The schedule is validated before it is returned."""
    text, origin = _text(snapshot, "snapshot")
    return json.loads(
        _native.schedule(
            text, scheduler, seed, samples, time_limit, origin, goodput, round_s, restart_s, grow
        )
    )


def solve(
    instance: Snapshot,
    *,
    time_limit: float = 60.0,
    program: str = "auto",
    node_limit: int | None = None,
    seed: int = 0,
) -> dict:
    """Solves one round with the integer program (``program``: ``auto``, ``compact`` or
    ``config``): ``{"schedule": ..., "report": {"status", "objective", "best_bound", "gap",
    ...}}``, as ``coda solve --json``."""
    text, origin = _text(instance, "instance")
    return json.loads(
        _native.solve(text, time_limit, program, node_limit, seed, origin)
    )


def score(
    snapshot: Snapshot,
    schedule: Mapping[str, Any],
    *,
    goodput: bool = False,
    round_s: float = 300.0,
    restart_s: float = 60.0,
) -> float:
    """The objective of ``schedule`` on the round (what the exact program maximises: the
    round's work, minus contention and restart losses), priced as :func:`schedule` prices it
    with the same ``goodput``, ``round_s`` and ``restart_s``. An invalid schedule is a
    :class:`CodaError` listing every violation."""
    text, _ = _text(snapshot, "snapshot")
    return _native.score(text, json.dumps(schedule), goodput, round_s, restart_s)


def _spec(trace: str, options: Mapping[str, Any]) -> str:
    spec = {"trace": trace}
    spec.update({k: (os.fspath(v) if isinstance(v, os.PathLike) else v)
                 for k, v in options.items() if v is not None})
    return json.dumps(spec)


def load_trace(trace: str, **options: Any) -> dict:
    """A trace's jobs on its cluster, as ``coda simulate`` loads them (``options``: its flags,
    e.g. ``cluster="4x8"``, ``take=100``, ``seed=1``): ``{"trace", "cluster_spec", "cluster",
    "jobs", "skipped"}``; ``cluster`` and each job are what a snapshot file holds."""
    return json.loads(_native.load_trace(_spec(trace, options)))


def simulate(trace: str, policy: str = "learned", **options: Any) -> dict:
    """Replays ``trace`` under ``policy``; ``options`` are ``coda simulate``'s flags with
    underscores (``cluster="4x8"``, ``take=100``, ``seed=1``, ``cpu_mem="fixed"``,
    ``policy_samples=1``, ``contention_allowance=1.0``...). Returns what ``coda simulate
    --json`` prints (same keys, same values) plus ``jobs``: one record per job."""
    return json.loads(_native.simulate(_spec(trace, options), policy))


def bound(trace: str, **options: Any) -> dict:
    """Lower bounds on the average JCT of ``trace``'s tracked jobs that no policy beats
    (``options``: ``coda simulate``'s workload and simulator flags); what ``coda bound --json``
    prints: ``{"avg_jct_s": ..., "bounds": {"alone": ..., "capacity": ..., "lp": ...}, ...}``."""
    return json.loads(_native.bound(_spec(trace, options)))


def gap(
    labels: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
    policies: Iterable[str] = ("learned",),
    *,
    include_unproven: bool = False,
) -> list[dict]:
    """Per labelled round (``coda label`` files) and policy: the objective, the reference (the
    proven optimum) and the gap ``(reference - objective) / |reference|``, as ``coda gap``."""
    if isinstance(labels, (str, os.PathLike)):
        labels = [labels]
    return json.loads(
        _native.gap([os.fspath(p) for p in labels], list(policies), include_unproven)
    )


def comparison_csv(runs: Iterable[Mapping[str, Any]]) -> str:
    """``coda compare``'s ``comparison.csv`` of runs as :func:`simulate` returns them."""
    return _native.comparison_csv([json.dumps(r) for r in runs])


from .env import ClusterEnv  # noqa: E402  (needs the functions above only through _native)

try:
    import gymnasium as _gym

    if "coda/Cluster-v0" not in _gym.registry:
        _gym.register(id="coda/Cluster-v0", entry_point="coda.env:ClusterEnv")
except ImportError:  # pragma: no cover - gymnasium is a dependency of the package
    pass
