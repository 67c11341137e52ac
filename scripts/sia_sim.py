"""coda's policies inside Sia's own simulator (SOSP'23, `siasosp23/artifacts`, `sia-simulator/`),
beside Sia's, Pollux's and Gavel's: one replay of one workload per call, one CSV row out.

    python scripts/sia_sim.py --sia PATH/sia-simulator --workload workloads/philly/workload-1.csv \
        --policy coda-learned --out benches/results/sia-sim/runs.csv

Sia's, Pollux's and Gavel's replays run Sia's own entry points with the flags of its
`run_experiment.sh` (a child process). coda's replay runs Sia's `Cluster` (its jobs, its
throughput and gradient-noise traces, its batch-size tuning, its restart delays, its clock) with
a policy that, every round, converts Sia's view into a coda snapshot, calls
`coda.schedule(snapshot, scheduler, goodput=...)` through the Python package and converts the
schedule back into Sia's per-GPU allocation. Nothing of Sia's code is changed or copied.

The conversion (what it keeps and what it loses) is stated once, here:
- servers: each Sia node becomes a coda server of the matching GPU type (`aws` → t4, 4 GPUs;
  `dgx-ext` → a100, `rtx` → rtx2080ti, `azure` → v100, 8 GPUs; `quad` → rtx6000). Sia's
  simulator prices no CPU, memory or PCIe sharing, so the servers get room enough that cores and
  memory never bind, and the topology is two GPUs per PCIe switch, two switches per socket.
- jobs: model = Sia's application (coda's performance model is fitted to the same Pollux/Sia
  step-time profiles, except the `rtx` ones, which coda does not ship: it prices rtx2080ti
  from its cross-GPU fallback); all-reduce; per-GPU batch = the workload's batch ÷ its replicas;
  requested workers = the workload's replicas; at most min(64, max batch ÷ min per-GPU batch)
  workers (1 for ncf), as Sia's simulator allows. Work is Sia's progress unit (steps at the
  initial batch, weighted by statistical efficiency) in coda's unit (one GPU's step at the job's
  per-GPU batch): total = progress at the completion epoch × initial batch ÷ per-GPU batch; done
  likewise from the job's progress.
- the objective: coda's round is Sia's (`round_s`), a restart costs coda's estimate of 60 s
  (at most a round); Sia charges its own per-model delays.
- decisions: coda's GPUs per server become Sia's per-GPU node list; a job coda leaves where it
  is gets Sia's previous allocation back unchanged (no restart). Sia re-tunes the batch size
  for whatever allocation it gets (coda's decision does not choose it), charges its own
  per-model restart delays (cifar10 50 s ... imagenet 250 s) and counts a restart only when the
  GPUs per node change (coda charges every move).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

GPU_TYPES = {"aws": "t4", "azure": "v100", "dgx": "a100", "dgx-ext": "a100",
             "quad": "rtx6000", "rtx": "rtx2080ti"}

# Sia's own policies: the entry point and the flags of its run_experiment.sh.
SIA_POLICIES = {
    "sia": ("multi_simulator.py", 60, ["--policy=sia", "--policy_p_val=-0.5", "--mip_lambda_a=0.01",
                                       "--mip_lambda_n=1.1", "--project_throughputs",
                                       "--share_max_replicas"]),
    "gavel": ("multi_simulator.py", 360, ["--policy=gavel"]),
    "pollux": ("multi_simulator_unaware.py", 60, ["--policy=pollux", "--policy_p_val=-1"]),
}

FIELDS = ["workload", "policy", "interval_s", "goodput", "jobs", "avg_jct_s", "median_jct_s",
          "p99_jct_s", "makespan_s", "restarts_per_job", "policy_s", "wall_s", "machine"]


def topology(gpus: int) -> list[list[int]]:
    """Two GPUs per PCIe switch, two switches per socket."""
    switches = [2] * (gpus // 2) + ([gpus % 2] if gpus % 2 else [])
    return [switches[i:i + 2] for i in range(0, len(switches), 2)]


class Conversion:
    """Sia's cluster and jobs as coda snapshots, coda's schedules as Sia's allocations."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.servers = []  # (sia cluster name, node index) per coda server index
        for cname in cluster.clusters:
            for idx in range(cluster.num_nodes[cname]):
                self.servers.append((cname, idx))
        self.ids = {job.name: i for i, job in enumerate(cluster.jobs)}
        self.current = {}  # job name -> coda assignment it runs with now

    def server_json(self):
        out = []
        for cname, idx in self.servers:
            gpus = self.cluster.ngpus_per_node[cname]
            out.append({"name": f"{cname}-{idx}", "gpu_type": GPU_TYPES[cname],
                        "topology": topology(gpus), "cpu_cores": 16.0 * gpus,
                        "memory_gib": 64.0 * gpus, "nic_gbps": 100.0})
        return out

    def job_json(self, job):
        app = job.reference_app
        local = max(1, math.ceil(job.target_batch_size / job.target_num_replicas))
        max_workers = 1 if app.name == "ncf" else min(
            64, min(a.max_batch_size // a.min_local_bsz for a in job.applications.values()))
        unit = app.init_batch_size / local
        total = app.get_progress(app.get_completion_epoch(job.target_batch_size) + 1) * unit
        done = min(job.progress * unit, 0.999 * total)
        assign = self.current.get(job.name)
        out = {
            "id": self.ids[job.name], "arrival_s": float(job.submission_time),
            "model": app.name, "arch": "AllReduce", "total_iterations": total,
            "done_iterations": done,
            "demand": {"gpus_per_worker": 1, "cpu_per_worker": 1.0, "mem_per_worker_gib": 1.0,
                       "cpu_per_ps": 1.0, "mem_per_ps_gib": 1.0},
            "workers": {"min": 1, "max": int(max_workers)}, "ps": {"min": 0, "max": 0},
            "gpu_types": [], "local_batch": int(local),
            "requested": {"workers": int(min(job.target_num_replicas, max_workers)), "ps": 0},
        }
        if assign is not None and job.placement:
            out["current"] = assign
        return out

    def snapshot(self, names):
        jobs = [self.job_json(j) for j in self.cluster.jobs if j.name in names]
        return {"time_s": float(self.cluster.current_time),
                "cluster": {"servers": self.server_json()}, "jobs": jobs}

    def allocations(self, schedule, names, prev):
        by_id = {i: name for name, i in self.ids.items()}
        out = {name: (None, ()) for name in names}
        current = {}
        for a in schedule["assignments"]:
            name = by_id[a["job"]]
            nodes = sorted(self.servers[w["server"]] for w in a["workers"] for _ in w["gpus"])
            kinds = {c for c, _ in nodes}
            if len(kinds) != 1:
                raise SystemExit(f"job {name}: coda placed it on several GPU types {kinds}")
            cname = kinds.pop()
            alloc = (cname, [idx for _, idx in nodes])
            old = prev.get(name)
            # Sia compares allocations as values: give a job that stays its old value back.
            out[name] = old if old is not None and old[0] == cname and sorted(old[1]) == alloc[1] \
                else alloc
            current[name] = {"job": a["job"], "workers": a["workers"], "ps": []}
        self.current = current
        return out


def coda_policy_class(base):
    """A subclass of Sia's SiaPolicy (so that Sia's Cluster treats the jobs as Sia's: batch-size
    tuning, rigid ncf) whose decisions are coda's."""

    class CodaPolicy(base):
        def __init__(self, scheduler, goodput, time_limit, seed, grow):
            super().__init__(p_fairness=-0.5, restart_penalty=30, lambda_a=0.01, lambda_n=1.1,
                             project_throughputs=True, share_max_replicas=True)
            self.scheduler, self.goodput = scheduler, goodput
            self.time_limit, self.seed, self.grow = time_limit, seed, grow
            self.conversion = None
            self.policy_s = 0.0
            self.round_s = 300.0
            self.restart_s = 60.0

        def optimize(self, job_infos, node_infos, prev_allocations):
            import coda
            names = set(job_infos)
            snap = self.conversion.snapshot(names)
            start = time.perf_counter()
            sched = coda.schedule(snap, scheduler=self.scheduler, seed=self.seed,
                                  time_limit=self.time_limit, goodput=self.goodput,
                                  round_s=self.round_s, restart_s=self.restart_s,
                                  grow=self.grow)
            self.policy_s += time.perf_counter() - start
            return self.conversion.allocations(sched, names, prev_allocations)

    return CodaPolicy


def run_coda(args):
    sys.path.insert(0, args.sia)
    os.chdir(args.sia)
    import pandas
    import simulator_config as sim_config
    from cluster import Cluster
    from sia import SiaPolicy

    workload = pandas.read_csv(args.workload)
    ngpus = {k: sim_config.cluster_ngpus_per_node[k] for k in sim_config.cluster_nnodes}
    # coda-<scheduler>[-grow<N>]: a learned policy with N moves of local search (--policy-grow).
    m = re.fullmatch(r"coda-(.+?)(?:-grow(\d+))?", args.policy)
    scheduler, grow = m[1], int(m[2] or 0)
    policy = coda_policy_class(SiaPolicy)(scheduler, args.goodput == "on", args.time_limit,
                                          args.seed, grow)
    policy.populate_valid_configs(sim_config.cluster_nnodes, ngpus,
                                  sim_config.cluster_max_physical_nnodes)
    cluster = Cluster(workload, policy, sim_config.cluster_nnodes, ngpus,
                      max_physical_nodes=sim_config.cluster_max_physical_nnodes)
    policy.conversion = Conversion(cluster)
    policy.round_s = float(args.interval)
    policy.restart_s = min(args.restart_s, policy.round_s)
    rounds = 0
    while not cluster.all_complete():
        cluster.step(args.interval)
        rounds += 1
        if rounds % 100 == 0:
            done = sum(j.completion_time is not None for j in cluster.jobs)
            print(f"sia_sim: t={cluster.current_time} s, {done}/{len(cluster.jobs)} done",
                  file=sys.stderr, flush=True)
    name = os.path.splitext(os.path.basename(args.workload))[0]
    cluster.output_logs(os.path.join(args.logs, f"{args.policy}-{name}.log"))
    return cluster.logs[-1], policy.policy_s


def run_sia(args, log):
    entry, _, flags = SIA_POLICIES[args.policy]
    cmd = [args.python or sys.executable, entry, args.workload, f"--interval={args.interval}",
           f"--output={log}"] + flags
    with open(log + ".out", "w") as f:
        subprocess.run(cmd, cwd=args.sia, stdout=f, stderr=subprocess.STDOUT, check=True)
    return last_record(log), float("nan")


def last_record(log):
    """The last round of a Sia log (one JSON record per round): every job's final state."""
    with open(log) as f:
        for line in f:
            last = line
    return json.loads(last)


def summary(record):
    jobs = record["submitted_jobs"]
    if any(j["completion_time"] is None for j in jobs):
        raise SystemExit("sia_sim: the replay ended with unfinished jobs")
    jcts = sorted(j["completion_time"] - j["submission_time"] for j in jobs)
    makespan = max(j["completion_time"] for j in jobs) - min(j["submission_time"] for j in jobs)
    restarts = [j["num_restarts"] or 0 for j in jobs]
    return {"jobs": len(jobs), "avg_jct_s": statistics.mean(jcts),
            "median_jct_s": statistics.median(jcts), "p99_jct_s": jcts[int(0.99 * len(jcts))],
            "makespan_s": makespan, "restarts_per_job": statistics.mean(restarts)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sia", required=True, help="path to a checkout's sia-simulator/ folder")
    p.add_argument("--workload", required=True, help="workload CSV, relative to --sia")
    p.add_argument("--policy", required=True,
                   help="sia, gavel, pollux (Sia's own), or coda-<scheduler> (coda-learned, "
                        "coda-exact, coda-sia, coda-fifo...), a learned one with -grow<N> for N "
                        "moves of local search per round (coda-learned-grow8)")
    p.add_argument("--interval", type=int, help="round length, s (default: 60; gavel 360)")
    p.add_argument("--goodput", choices=["on", "off"], default="on")
    p.add_argument("--time-limit", type=float, default=2.0,
                   help="coda-exact: HiGHS time limit per round, s")
    p.add_argument("--restart-s", type=float, default=60.0,
                   help="coda: the seconds its objective charges a move (an estimate; at most "
                        "a round)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logs", default="/tmp/sia_sim_logs", help="where Sia's logs go")
    p.add_argument("--out", required=True,
                   help="CSV the row goes to (replacing a row of the same workload, policy, "
                        "round and goodput)")
    p.add_argument("--python", help="Sia's own policies: the interpreter to run them with "
                                    "(Pollux's pymoo 0.4 needs numpy < 1.24, Sia's CBC newer)")
    p.add_argument("--reuse-log", help="Sia's own policies: summarise this log of a run already "
                                       "made with the flags above instead of running it again")
    p.add_argument("--wall", type=float, help="with --reuse-log: that run's wall time, s")
    args = p.parse_args()
    args.sia = os.path.abspath(args.sia)
    args.out = os.path.abspath(args.out)
    args.logs = os.path.abspath(args.logs)
    coda_side = args.policy.startswith("coda-")
    if not coda_side and args.policy not in SIA_POLICIES:
        p.error(f"unknown policy {args.policy}")
    if args.interval is None:
        args.interval = 60 if coda_side else SIA_POLICIES[args.policy][1]
    os.makedirs(args.logs, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.workload))[0]
    start = time.perf_counter()
    if coda_side:
        record, policy_s = run_coda(args)
    elif args.reuse_log:
        record, policy_s = last_record(args.reuse_log), float("nan")
    else:
        record, policy_s = run_sia(args, os.path.join(args.logs, f"{args.policy}-{name}.log"))
    wall = args.wall if args.reuse_log else time.perf_counter() - start
    row = {"workload": f"{os.path.basename(os.path.dirname(args.workload))}/{name}",
           "policy": args.policy, "interval_s": args.interval,
           "goodput": args.goodput if coda_side else "", **summary(record),
           "policy_s": "" if math.isnan(policy_s) else round(policy_s, 1),
           "wall_s": round(wall, 1), "machine": f"{platform.machine()} {os.cpu_count()} cores"}
    for k in ("avg_jct_s", "median_jct_s", "p99_jct_s", "makespan_s"):
        row[k] = round(row[k], 1)
    row["restarts_per_job"] = round(row["restarts_per_job"], 3)
    # One row per (workload, policy, interval, goodput): a rerun replaces its row.
    key = [str(row[k]) for k in FIELDS[:4]]
    rows = []
    if os.path.exists(args.out):
        with open(args.out, newline="") as f:
            rows = [r for r in csv.DictReader(f) if [r[k] for k in FIELDS[:4]] != key]
    rows.append(row)
    rows.sort(key=lambda r: (r["workload"], r["policy"], int(r["interval_s"]), r["goodput"]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, args.out)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
