"""The Python package against the command line it wraps: the same rounds, replays, labels and
comparisons, errors that name their field, the Gymnasium environment's contract, and Ray's
sharded runs equal to the single-machine ones."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import coda
from coda import raycluster

ROOT = Path(__file__).resolve().parents[2]
CODA = os.environ.get("CODA_BIN", str(ROOT / "target" / "release" / "coda"))
SMALL = ROOT / "examples" / "instances" / "small.json"
# Seconds a run spends are not results: the columns that hold them are left out of comparisons.
WALL = {"wall_s", "events_per_s"}


def cli(*args: str) -> str:
    return subprocess.run([CODA, *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the shipped datasets/ are found from the repository root


def test_quick_start_round():
    snap = coda.load(SMALL)
    learned = coda.schedule(snap, scheduler="learned")
    exact = coda.solve(SMALL, time_limit=30)
    assert exact["report"]["status"] == "optimal"
    assert exact["report"]["gap"] <= 1e-6
    optimum = exact["report"]["objective"]
    assert coda.score(snap, exact["schedule"]) == pytest.approx(optimum, abs=1e-6)
    # No policy beats the proven optimum; the whole-round program (back-filled) reaches it.
    assert 0 < coda.score(snap, learned) <= optimum + 1e-6
    exact_round = coda.schedule(SMALL, scheduler="exact", time_limit=30)
    assert coda.score(snap, exact_round) == pytest.approx(optimum, abs=1e-6)
    # The lookahead plays its candidates forward: valid, so never above the optimum either.
    assert 0 < coda.score(snap, coda.schedule(snap, scheduler="lookahead")) <= optimum + 1e-6
    # The distilled gate chooses among the same kind of proposals, without playing them.
    assert 0 < coda.score(snap, coda.schedule(snap, scheduler="distilled")) <= optimum + 1e-6
    # Sia's program, and any scheduler pricing goodput: valid schedules too.
    assert 0 < coda.score(snap, coda.schedule(snap, scheduler="sia")) <= optimum + 1e-6
    assert 0 < coda.score(snap, coda.schedule(snap, scheduler="learned", goodput=True)) <= optimum + 1e-6


def test_round_length_and_restart_loss_price_a_move():
    snap = coda.load(SMALL)
    first = coda.schedule(snap, scheduler="exact", time_limit=30)
    # The next round: every job runs where the first put it.
    running = json.loads(json.dumps(snap))
    for a in first["assignments"]:
        next(j for j in running["jobs"] if j["id"] == a["job"])["current"] = a
    keep = {"assignments": first["assignments"]}
    stop = {"assignments": first["assignments"][1:]}

    def loss(**kw):
        return coda.score(running, keep, **kw) - coda.score(running, stop, **kw)

    # Stopping a job costs its round's work, plus the restart loss when there is one, which
    # weighs more against a short round's work than against a long one's.
    assert loss(round_s=60, restart_s=60) > loss(round_s=60, restart_s=0) > 0
    short = loss(round_s=60, restart_s=60) / loss(round_s=60, restart_s=0)
    long = loss(round_s=300, restart_s=60) / loss(round_s=300, restart_s=0)
    assert short > long > 1
    # The learned policy always proposes staying: told the round's length, it scores no lower
    # than keeping every running job where it is.
    again = coda.schedule(running, scheduler="learned", round_s=60, restart_s=60)
    assert coda.score(running, again, round_s=60, restart_s=60) >= \
        coda.score(running, keep, round_s=60, restart_s=60) - 1e-9
    with pytest.raises(coda.CodaError, match="restart_s"):
        coda.schedule(running, round_s=60, restart_s=120)
    # The local search ending a round (grow) starts from the round's best proposal: never
    # lower, and a valid schedule (coda.schedule validates what it returns).
    grown = coda.schedule(running, scheduler="learned", round_s=60, restart_s=60, grow=8)
    assert coda.score(running, grown, round_s=60, restart_s=60) >= \
        coda.score(running, again, round_s=60, restart_s=60) - 1e-9


def test_a_trace_loads_as_snapshot_jobs():
    t = coda.load_trace("philly", cluster="4x8", take=25, seed=2)
    assert (t["cluster_spec"], len(t["jobs"])) == ("4x8", 25)
    snap = {"time_s": 0.0, "cluster": t["cluster"], "jobs": t["jobs"][:6]}
    assert coda.score(snap, coda.schedule(snap, scheduler="drf")) > 0


def test_errors_name_file_line_and_field(tmp_path):
    snap = coda.load(SMALL)
    snap["jobs"][0]["total_iterations"] = -5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(snap, indent=1))
    with pytest.raises(coda.CodaError) as e:
        coda.schedule(bad)
    assert str(bad) in str(e.value) and "total_iterations" in str(e.value)
    with pytest.raises(coda.CodaError, match="field `tkae`"):
        coda.simulate("philly", tkae=10)
    with pytest.raises(coda.CodaError, match="restart_s"):
        coda.simulate("philly", take=10, restart_s=600, round_s=300)
    with pytest.raises(coda.CodaError, match="expected auto, compact or config"):
        coda.solve(SMALL, program="simplex")


def _without(d: dict, keys) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def test_simulate_is_the_command_line_replay():
    opts = ["--trace", "philly", "--cluster", "4x8", "--take", "80", "--seed", "3"]
    for policy in ("drf", "learned"):
        out = json.loads(cli("simulate", *opts, "--policy", policy, "--out",
                             str(ROOT / "out" / "pytest-sim"), "--quiet", "--json"))
        run = coda.simulate("philly", policy=policy, cluster="4x8", take=80, seed=3)
        assert len(run.pop("jobs")) == 80
        assert _without(run, WALL) == _without(out, WALL)


def test_bound_is_the_command_line_one_and_below_every_run():
    opts = ["--trace", "philly", "--cluster", "4x8", "--take", "80", "--seed", "3"]
    b = coda.bound("philly", cluster="4x8", take=80, seed=3)
    assert b == json.loads(cli("bound", *opts, "--json"))
    assert b["avg_jct_s"] >= b["bounds"]["alone"] > 0
    for policy in ("drf", "learned"):
        run = coda.simulate("philly", policy=policy, cluster="4x8", take=80, seed=3)
        assert run["avg_jct_s"] >= b["avg_jct_s"]


def test_env_passes_gymnasiums_checker():
    env = gym.make("coda/Cluster-v0", trace="philly", cluster="4x8", take=50)
    check_env(env.unwrapped)


def test_a_thousand_random_masked_actions_never_make_an_invalid_schedule():
    # Every round's schedule is validated by the simulator before it is applied: an invalid
    # one would raise CodaError here.
    env = coda.ClusterEnv(trace="philly", cluster="2x8", take=40, slots=256, strict=True)
    rng = np.random.default_rng(7)
    env.reset(seed=0)
    episodes, phases = 0, set()
    for _ in range(1000):
        mask = env.action_masks()
        assert mask.any()
        _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        phases.add(info["phase"])
        if terminated:
            episodes += 1
            assert len(env.run["jobs"]) == 40
            env.reset(seed=episodes)
    assert {"pick", "option", "place"} <= phases


def test_same_seed_same_episode():
    def trajectory(seed):
        env = coda.ClusterEnv(trace="philly", cluster="4x8", take=30)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(1)
        out = [obs.sum()]
        for _ in range(300):
            obs, r, term, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            out.append((obs.sum(), r))
            if term:
                env.reset(seed=seed)
        return out
    assert trajectory(4) == trajectory(4)


def test_the_learned_policy_through_the_env_reproduces_simulate():
    env = coda.ClusterEnv(trace="philly", cluster="4x8", take=150, hints=True)
    env.reset(seed=0)
    steps = 0
    while True:
        _, _, terminated, _, _ = env.step(env.policy_action())
        steps += 1
        if terminated:
            break
    ref = coda.simulate("philly", policy="learned", cluster="4x8", take=150, cpu_mem="fixed",
                        policy_samples=1)
    finish = {j["id"]: j["finish_s"] for j in ref["jobs"]}
    assert len(env.run["jobs"]) == 150
    assert all(finish[j["id"]] == j["finish_s"] for j in env.run["jobs"])
    out = json.loads(cli("simulate", "--trace", "philly", "--cluster", "4x8", "--take", "150",
                         "--policy", "learned", "--policy-samples", "1", "--cpu-mem", "fixed",
                         "--out", str(ROOT / "out" / "pytest-env"), "--quiet", "--json"))
    assert env.run["avg_jct_s"] == out["avg_jct_s"] and env.run["makespan_s"] == out["makespan_s"]
    assert steps > 150


def test_masked_actions_are_replaced_or_refused():
    env = coda.ClusterEnv(trace="philly", cluster="4x8", take=20, strict=True)
    env.reset()
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(coda.CodaError, match="masked"):
        env.step(bad)
    lenient = coda.ClusterEnv(trace="philly", cluster="4x8", take=20)
    lenient.reset()
    _, _, _, _, info = lenient.step(bad)
    assert info["masked_action"]


def test_gap_scores_baselines_as_the_command_line(tmp_path):
    labels = tmp_path / "labels.jsonl"
    assert subprocess.run([sys.executable, "-m", "coda.distributed", "--local", "label",
                           "--sizes", "2x4", "--rounds", "2", "--node-limit", "400",
                           "--time-limit", "100", "--out", str(labels)], cwd=ROOT).returncode == 0
    rows = coda.gap(labels, ["drf", "fifo"])
    cli("gap", "--labels", str(labels), "--out", str(tmp_path / "gap"))
    with open(tmp_path / "gap" / "gap.csv") as f:
        ref = {(r["round"], r["policy"]): float(r["gap"]) for r in csv.DictReader(f)}
    assert len(rows) == 4
    for r in rows:
        assert r["gap"] == pytest.approx(ref[(r["round"], r["policy"])], rel=0, abs=1e-12)


# --- Ray: a local "cluster" of two nodes, one CPU each -------------------------------------
# Everything Ray needs comes from the cluster's own folder: HOME is an empty folder nobody may
# write into, so a token left in ~/.ray by earlier work cannot make these tests pass.

@pytest.fixture(scope="module")
def bare_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    home.chmod(0o555)
    yield home
    home.chmod(0o755)
    assert not any(home.iterdir())


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory, bare_home):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ["HOME"] = str(bare_home)
    with raycluster.LocalCluster(str(tmp_path_factory.mktemp("ray")), nodes=2, cpus=1,
                                 environ=environ) as c:
        yield c.address, c.env


def test_ray_needs_its_token_and_the_error_says_so(ray_cluster, tmp_path):
    address, env = ray_cluster
    bare = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    r = subprocess.run([sys.executable, "-m", "coda.distributed", "--address", address, "sweep",
                        "--policies", "fifo", "--take", "5", "--out", str(tmp_path)],
                       cwd=ROOT, env=bare, capture_output=True, text=True)
    assert r.returncode != 0
    assert "--token-file" in r.stderr, r.stderr[-2000:]


def test_a_local_ray_run_writes_nothing_into_home(bare_home, tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ["HOME"] = str(bare_home)
    spec = ["sweep", "--traces", "philly", "--policies", "fifo", "--cluster", "4x8",
            "--take", "20"]
    r = distributed(environ, "--workers", "1", *spec, "--out", str(tmp_path / "ray"))
    assert r["runs"] == 1
    distributed(environ, "--local", *spec, "--out", str(tmp_path / "local"))
    assert _rows(tmp_path / "ray" / "philly-seed0" / "comparison.csv") == _rows(
        tmp_path / "local" / "philly-seed0" / "comparison.csv")
    assert not any(bare_home.iterdir())


def distributed(env, *args) -> dict:
    out = subprocess.run([sys.executable, "-m", "coda.distributed", *args], cwd=ROOT, env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _labels(path):
    with open(path) as f:
        return [_without(json.loads(line), {"solve_s"}) for line in f]


def test_ray_labels_equal_coda_label_and_resume(ray_cluster, tmp_path):
    address, env = ray_cluster
    # The node limit binds, never the time limit: a solve cut by the clock on a loaded machine
    # (it happened beside two other replays on 2 cores) ends at another incumbent.
    spec = ["--sizes", "2x4,3x6", "--rounds", "2", "--node-limit", "400", "--time-limit", "1000"]
    cli("label", *spec, "--threads", "1", "--out", str(tmp_path / "cli.jsonl"))
    r = distributed(env, "--address", address, "label", *spec, "--out", str(tmp_path / "ray.jsonl"))
    assert r["rounds"] == 4
    assert _labels(tmp_path / "ray.jsonl") == _labels(tmp_path / "cli.jsonl")
    # An interrupted run: the last line cut short and one round missing; resuming completes it.
    text = (tmp_path / "ray.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "cut.jsonl").write_text("".join(text[:2]) + text[2][:40])
    r = distributed(env, "--address", address, "label", *spec, "--out", str(tmp_path / "cut.jsonl"))
    assert (r["rounds"], r["skipped"]) == (2, 2)
    assert _labels(tmp_path / "cut.jsonl") == _labels(tmp_path / "cli.jsonl")


def test_ray_rollouts_equal_the_local_run(ray_cluster, tmp_path):
    address, env = ray_cluster
    spec = ["rollouts", "--cluster", "4x8", "--take", "60", "--length", "30", "--episodes", "2",
            "--seeds", "2"]
    distributed(env, "--local", *spec, "--out", str(tmp_path / "local.csv"))
    distributed(env, "--address", address, *spec, "--out", str(tmp_path / "ray.csv"))
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert len((tmp_path / "ray.csv").read_text().splitlines()) == 5


def _rows(path):
    with open(path) as f:
        return [_without(r, WALL) for r in csv.DictReader(f)]


def test_ray_sweep_equals_coda_compare(ray_cluster, tmp_path):
    address, env = ray_cluster
    grid = ["--policies", "fifo,drf,learned", "--cluster", "4x8", "--take", "60"]
    distributed(env, "--address", address, "sweep", "--traces", "philly", "--seeds", "0,1",
                *grid, "--out", str(tmp_path / "sweep"))
    distributed(env, "--address", address, "sweep", "--traces", "philly", "--seeds", "0",
                "--vary", "restart_s=30,120", *grid, "--out", str(tmp_path / "vary"))
    cells = [(f"sweep/philly-seed{s}", ["--seed", str(s)]) for s in (0, 1)]
    cells += [(f"vary/philly-seed0-restart_s={r}", ["--restart-s", str(r)]) for r in (30, 120)]
    for i, (cell, flags) in enumerate(cells):
        cli("compare", "--trace", "philly", *flags, *grid, "--quiet",
            "--out", str(tmp_path / f"cmp{i}"))
        assert _rows(tmp_path / cell / "comparison.csv") == _rows(
            tmp_path / f"cmp{i}" / "comparison.csv")
