#!/usr/bin/env python3
"""The live test of `coda slurm` on a real Slurm cluster (scripts/slurm_cluster.sh up).

Replays a workload of tagged jobs twice on the same cluster — once under Slurm's own backfill
(every job submitted with the GPUs it asks for), once held and placed by `coda slurm run` — each
job sleeping the time coda's performance model predicts for the GPUs it actually got
(`coda slurm job`, re-priced every tick, `--time-scale` model seconds per wall second). Then:
  * checks that every job finished, none is left held or running, and no process is left;
  * runs the fault cases (--faults): slurmctld restarted mid-run, the daemon killed and
    restarted, a node drained, a job cancelled by its user, a malformed tag;
  * writes per-job and average JCT (model time) of both runs next to `coda simulate`'s
    prediction for the same jobs, to OUT/live.csv, OUT/live.md (and OUT/faults.md).
Exit status 1 if any check fails. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(*argv, check=True, capture=True):
    r = subprocess.run(argv, capture_output=capture, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return r.stdout


def squeue():
    return json.loads(sh("squeue", "--json"))["jobs"]


def log(msg):
    print(f"[slurm_live {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Live:
    def __init__(self, a):
        self.a = a
        self.coda = str(Path(a.coda).resolve())
        self.common = ["--nodes", a.nodes, "--cluster", a.cluster,
                       "--datasets", str(ROOT / "datasets"), "--time-scale", str(a.scale)]
        self.jobs = [json.loads(l) for l in sh(
            self.coda, "slurm", "workload", "--trace", a.workload,
            "--datasets", str(ROOT / "datasets")).splitlines() if l.strip()]
        self.failures = []
        self.fault_times = {}
        self.cancelled = None

    def check(self, ok, what):
        log(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            self.failures.append(what)

    def clear(self):
        ids = [str(j["job_id"]) for j in squeue()
               if j["job_state"] in ("PENDING", "RUNNING", "COMPLETING")]
        if ids:
            sh("scancel", *ids, check=False)
        for _ in range(60):
            if not any(j["job_state"] in ("PENDING", "RUNNING", "COMPLETING") for j in squeue()):
                return
            time.sleep(0.5)

    def daemon(self, logf):
        cmd = [self.coda, "slurm", "run", *self.common, "--policy", self.a.policy,
               "--restart-s", str(self.a.restart_s)]
        return subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)

    def submit(self, job, held, record, comment=None):
        # `exec`: a shell left between slurmstepd and the job makes every stop take ~3.7 s.
        payload = " ".join(["exec", self.coda, "slurm", "job", *[f"'{c}'" for c in self.common],
                            "--restart-s", str(self.a.restart_s), "--record", str(record)])
        logs = Path(self.a.out) / "job-logs"
        logs.mkdir(parents=True, exist_ok=True)
        argv = ["sbatch", "--parsable", "-J", f"coda-{job['id']}", "-o", str(logs / "%j.out"),
                "--comment", comment or job["comment"]]
        if held:
            argv += ["--hold"]
        else:
            argv += ["-N", str(job["nodes"]), f"--gres=gpu:{job['gpus_per_node']}"]
        return int(sh(*argv, "--wrap", payload).strip().split(";")[0])

    def replay(self, mode, out, faults=False):
        """One replay; returns {slurm id: (job, submit wall time)} and the record folder."""
        self.clear()
        record = out / f"records-{mode}"
        record.mkdir(parents=True, exist_ok=True)
        for f in record.glob("*.json"):
            f.unlink()
        logf = open(out / f"daemon-{mode}.log", "w")
        d = self.daemon(logf) if mode != "backfill" else None
        t0 = time.time()
        submitted = {}
        events = sorted(self.jobs, key=lambda j: j["arrival_s"])
        fault_at = {}
        if faults:
            span = events[-1]["arrival_s"] / self.a.scale
            fault_at = {"slurmctld": t0 + 0.3 * span, "daemon": t0 + 0.6 * span,
                        "drain": t0 + 0.5 * span, "cancel": t0 + 0.8 * span}
        done_faults = set()
        if faults:
            # A held job whose tag cannot be read: coda must hand it back to Slurm.
            self.malformed = int(sh("sbatch", "--parsable", "--hold", "-J", "coda-malformed",
                                    "-o", "/dev/null", "--comment",
                                    "coda:model=bert,gpus=two,iters=5", "--wrap", "sleep 1").strip())
        deadline = t0 + self.a.max_wall
        pending = list(events)
        self.held = {}
        last = time.time()
        while time.time() < deadline:
            now = time.time()
            # Wall seconds each job spends held (waiting for coda to place it).
            try:
                for j in squeue():
                    if j["job_id"] in submitted and j["job_state"] == "PENDING" and j["priority"] == 0:
                        self.held[j["job_id"]] = self.held.get(j["job_id"], 0.0) + (now - last)
            except (RuntimeError, json.JSONDecodeError):
                pass  # slurmctld restarting (the fault run)
            last = now
            while pending and t0 + pending[0]["arrival_s"] / self.a.scale <= now:
                j = pending.pop(0)
                sid = self.submit(j, held=mode != "backfill", record=record)
                submitted[sid] = (j, time.time())
            for name, at in fault_at.items():
                if name not in done_faults and now >= at:
                    done_faults.add(name)
                    d = self.fault(name, d, logf, submitted)
            if not pending and all((record / f"{sid}.json").exists() or self.gone(sid)
                                   for sid in submitted):
                break
            time.sleep(0.2)
        self.daemon_alive = d is None or d.poll() is None
        if d:
            d.terminate()
            d.wait(10)
        logf.close()
        return submitted, record, time.time() - t0

    def gone(self, sid):
        return self.cancelled == sid

    def fault(self, name, d, logf, submitted):
        """Injects one fault; returns the daemon process (a new one after `daemon`)."""
        self.fault_times[name] = time.time()
        if name == "slurmctld":
            log("fault: slurmctld stopped and started again")
            pid = int(Path(self.a.slurm_dir, "run", "slurmctld.pid").read_text())
            os.kill(pid, 15)
            for _ in range(40):
                if subprocess.run(["scontrol", "ping"], capture_output=True).returncode != 0:
                    break
                time.sleep(0.25)
            time.sleep(1.0)
            sh("slurmctld", "-f", os.environ["SLURM_CONF"])
            for _ in range(40):
                if subprocess.run(["scontrol", "ping"], capture_output=True).returncode == 0:
                    break
                time.sleep(0.25)
        elif name == "daemon" and d:
            log("fault: the daemon killed (SIGKILL) and started again")
            d.kill()
            d.wait()
            d = self.daemon(logf)
        elif name == "drain":
            log("fault: n4 drained")
            sh("scontrol", "update", "NodeName=n4", "State=DRAIN", "Reason=coda-live-test")
        elif name == "cancel":
            running = [j for j in squeue() if j["job_state"] == "RUNNING"
                       and j["job_id"] in submitted]
            if running:
                self.cancelled = running[0]["job_id"]
                log(f"fault: the user cancels job {self.cancelled}")
                sh("scancel", str(self.cancelled))
        return d

    def results(self, mode, submitted, record):
        rows = []
        for sid, (j, sub) in sorted(submitted.items(), key=lambda kv: kv[1][0]["id"]):
            f = record / f"{sid}.json"
            held = self.held.get(sid, 0.0) * self.a.scale
            if not f.exists():
                rows.append({"mode": mode, "job": j["id"], "model": j["model"], "gpus": j["gpus"],
                             "jct_s": None, "restarts": None, "held_s": held})
                continue
            r = json.loads(f.read_text())
            rows.append({"mode": mode, "job": j["id"], "model": j["model"], "gpus": j["gpus"],
                         "jct_s": (r["end_s"] - sub) * self.a.scale, "restarts": r["restarts"],
                         "held_s": held})
        return rows

    def leftovers(self, submitted):
        left = [j for j in squeue() if j["job_id"] in submitted
                and j["job_state"] in ("PENDING", "RUNNING", "COMPLETING")]
        return left

    def simulate(self, policy):
        """Each job's JCT (s) in `coda simulate` of the same jobs, by trace id."""
        d = Path(self.a.out) / f"sim-{policy}"
        sh(self.coda, "simulate", "--trace", self.a.workload, "--cluster", self.a.cluster,
           "--cpu-mem", "fixed", "--contention-allowance", "1", "--restart-s",
           str(self.a.restart_s), "--datasets",
           str(ROOT / "datasets"), "--policy", policy, "--quiet", "--out", str(d))
        lines = (d / "jobs.csv").read_text().splitlines()
        head = lines[0].split(",")
        rows = [dict(zip(head, l.split(","))) for l in lines[1:]]
        return {int(r["id"]): float(r["jct_s"]) for r in rows if r["jct_s"]}


def faults(live, out):
    """The fault run: coda with slurmctld restarted, n4 drained, the daemon killed and restarted,
    a job cancelled by its user, and a held job with a malformed tag."""
    log("fault run")
    live.clear()
    submitted, record, wall = live.replay("faults", out, faults=True)
    bad = live.malformed
    got = live.results("faults", submitted, record)
    by_sid = {sid: j["id"] for sid, (j, _) in submitted.items()}
    lost = [r for r in got if r["jct_s"] is None and by_sid.get(live.cancelled) != r["job"]]
    live.check(not lost, f"faults: every job but the cancelled one finished ({len(got)} jobs, "
               f"{wall:.0f} s; unfinished: {[r['job'] for r in lost]})")
    live.check(live.cancelled is not None, "faults: a running job was cancelled by its user")
    left = live.leftovers(submitted)
    live.check(not left, f"faults: no job left pending, held or running ({len(left)})")
    live.check(live.daemon_alive, "faults: the daemon outlived slurmctld's restart")
    bad_job = [j for j in squeue() if j["job_id"] == bad]
    released = bool(bad_job) and bad_job[0]["job_state"] != "CANCELLED" and (
        bad_job[0]["job_state"] != "PENDING" or bad_job[0]["priority"] != 0)
    live.check(released, f"faults: the malformed tag's job {bad} released to Slurm, not left held")
    dlog = (out / "daemon-faults.log").read_text()
    live.check(f"job {bad}: released" in dlog and "comment.gpus" in dlog,
               "faults: the daemon's log names the job and the malformed field")
    drained_at = live.fault_times.get("drain", float("inf"))
    late = []
    for line in dlog.splitlines():
        if line.startswith("[coda slurm ") and (" start on " in line or " move on " in line):
            t = float(line.split()[2].rstrip("]"))
            nodes = line.split(" on ")[1].split(" with ")[0].split(",")
            if t > drained_at + 0.5 and "n4" in nodes:
                late.append(line)
    live.check(not late, f"faults: nothing placed on drained n4 ({len(late)} placements)")
    sh("scontrol", "update", "NodeName=n4", "State=RESUME", check=False)
    unread = dlog.count("cannot read Slurm")
    rows = [
        ("slurmctld stopped and restarted",
         f"the daemon logged {unread} round(s) that could not read Slurm and went on; jobs kept "
         "running (their checkpoints waited for slurmctld)"),
        ("n4 drained", f"placements on n4 afterwards: {len(late)}"),
        ("the daemon killed (SIGKILL) and restarted",
         "the new daemon rebuilt its state from Slurm (held jobs, tags, checkpoints) and went on"),
        (f"job {live.cancelled} cancelled by its user", "gone from the next round"),
        (f"held job {bad} tagged `gpus=two`",
         "released to Slurm as submitted; the log names the job and `comment.gpus`"),
        ("all", f"{sum(r['jct_s'] is not None for r in got)} of {len(got) - 1} jobs finished "
                f"(job {live.cancelled} cancelled), none left held; {wall:.0f} s"),
    ]
    with open(out / "faults.csv", "w") as f:
        f.write("fault,outcome\n")
        for fault, outcome in rows:
            f.write(f'"{fault}","{outcome}"\n')
    sh("scancel", str(bad), check=False)


def avg(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--coda", default=str(ROOT / "target/release/coda"))
    p.add_argument("--workload", default=str(ROOT / "examples/slurm/workload.csv"))
    p.add_argument("--cluster", default="4xdgx-1-v100")
    p.add_argument("--nodes", default="n[1-4]")
    p.add_argument("--policy", default="learned")
    p.add_argument("--scale", type=float, default=240.0,
                   help="model seconds per wall second")
    p.add_argument("--max-wall", type=float, default=150.0, help="wall seconds per replay")
    p.add_argument("--restart-s", type=float, default=300.0,
                   help="restart cost (model seconds): the daemon's objective, the job's sleep "
                        "after a requeue and the simulator's charge")
    p.add_argument("--out", default=str(ROOT / "benches/results/slurm"))
    p.add_argument("--faults", action="store_true", help="also run the fault cases")
    p.add_argument("--slurm-dir", default=os.environ.get("CODA_SLURM_DIR", "/tmp/coda-slurm"))
    a = p.parse_args()
    os.environ.setdefault("SLURM_CONF", str(Path(a.slurm_dir) / "slurm.conf"))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    live = Live(a)
    rows = []
    walls = {}
    for mode in ("backfill", "coda"):
        log(f"replay under {mode}: {len(live.jobs)} jobs, x{a.scale:g} time")
        submitted, record, wall = live.replay(mode, out)
        walls[mode] = wall
        got = live.results(mode, submitted, record)
        rows += got
        live.check(all(r["jct_s"] is not None for r in got),
                   f"{mode}: all {len(got)} jobs finished ({wall:.0f} s wall)")
        left = live.leftovers(submitted)
        live.check(not left, f"{mode}: no job left pending, held or running ({len(left)})")
    sims = {pol: live.simulate(pol) for pol in ("fifo", a.policy)}
    with open(out / "live.csv", "w") as f:
        f.write("mode,job,model,gpus,jct_s,restarts,held_s\n")
        for r in rows:
            jct = "" if r["jct_s"] is None else f"{r['jct_s']:.1f}"
            f.write(f"{r['mode']},{r['job']},{r['model']},{r['gpus']},{jct},"
                    f"{'' if r['restarts'] is None else r['restarts']},{r['held_s']:.1f}\n")
    by = {m: [r for r in rows if r["mode"] == m] for m in ("backfill", "coda")}
    lines = ["| run | avg JCT (h) | simulated by `coda simulate` (h) | live ÷ simulated | restarts | wall (s) |",
             "|---|---|---|---|---|---|"]
    summary = ["run,policy,jobs,finished,avg_jct_h,simulated_h,live_over_simulated,restarts,"
               "avg_held_h,wall_s"]
    for m, pol in (("backfill", "fifo"), ("coda", a.policy)):
        live_h = avg(r["jct_s"] for r in by[m]) / 3600
        sim_h = avg(sims[pol].values()) / 3600
        summary.append(f"{m},{pol},{len(by[m])},{sum(r['jct_s'] is not None for r in by[m])},"
                       f"{live_h:.4f},{sim_h:.4f},{live_h / sim_h:.4f},"
                       f"{sum(r['restarts'] or 0 for r in by[m])},"
                       f"{avg(r['held_s'] for r in by[m]) / 3600:.4f},{walls[m]:.1f}")
        lines.append(f"| {'Slurm backfill alone' if m == 'backfill' else '`coda slurm --policy ' + a.policy + '`'} "
                     f"| {live_h:.3f} | {sim_h:.3f} ({pol}) | {live_h / sim_h:.3f} | "
                     f"{sum(r['restarts'] or 0 for r in by[m])} | {walls[m]:.0f} |")
    per = ["| job | model | GPUs asked | JCT backfill (h) | simulated fifo (h) | JCT coda (h) | "
           f"simulated {a.policy} (h) | restarts (coda) | held by coda (h) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for b, c in zip(by["backfill"], by["coda"]):
        f = lambda x: "–" if x is None else f"{x / 3600:.2f}"
        per.append(f"| {b['job']} | {b['model']} | {b['gpus']} | {f(b['jct_s'])} | "
                   f"{f(sims['fifo'].get(b['job']))} | {f(c['jct_s'])} | "
                   f"{f(sims[a.policy].get(c['job']))} | {c['restarts']} | {f(c['held_s'])} |")
    (out / "summary.csv").write_text("\n".join(summary) + "\n")
    (out / "live.md").write_text("\n".join(lines) + "\n\n" + "\n".join(per) + "\n")
    print("\n".join(lines))
    if a.faults:
        faults(live, out)
    live.clear()
    if live.failures:
        print("FAILED:", *live.failures, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
