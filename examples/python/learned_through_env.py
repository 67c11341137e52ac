"""coda's own learned policy driven through the Gymnasium environment, one decision per step,
against ``coda.simulate`` (the library path of ``coda simulate``) with the same policy decoding
greedily: the same schedule every round, so the same completion time for every job.

    python examples/python/learned_through_env.py --trace philly --cluster 4x8 --take 200
    python examples/python/learned_through_env.py --trace philly --whole   # the Philly window

Prints steps, wall times and the JCTs of both; exits 1 if any job's finish time differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import coda


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="philly")
    ap.add_argument("--cluster", default="4x8")
    ap.add_argument("--take", type=int, default=200)
    ap.add_argument("--whole", action="store_true", help="the trace on its own cluster")
    ap.add_argument("--slots", type=int, default=512,
                    help="the env's slots: at least the most jobs present in a round + 1")
    ap.add_argument("--cli", help="also time this coda binary's `simulate` on the same jobs")
    ap.add_argument("--csv", help="append one row of timings here")
    a = ap.parse_args()
    opts = {} if a.whole else {"cluster": a.cluster, "take": a.take}

    where = {"cluster": None, "take": None} if a.whole else opts
    env = coda.ClusterEnv(trace=a.trace, hints=True, slots=a.slots, **where)
    t0 = time.perf_counter()
    env.reset(seed=0)
    steps, ret = 0, 0.0
    while True:
        _, reward, terminated, _, _ = env.step(env.policy_action())
        steps += 1
        ret += reward
        if terminated:
            break
    env_s = time.perf_counter() - t0
    run = env.run

    t0 = time.perf_counter()
    ref = coda.simulate(a.trace, policy="learned", cpu_mem="fixed", policy_samples=1, **opts)
    sim_s = time.perf_counter() - t0

    cli_s = float("nan")
    if a.cli:
        flags = [] if a.whole else ["--cluster", a.cluster, "--take", str(a.take)]
        t0 = time.perf_counter()
        subprocess.run([a.cli, "simulate", "--trace", a.trace, *flags, "--policy", "learned",
                        "--policy-samples", "1", "--cpu-mem", "fixed", "--quiet", "--json",
                        "--out", tempfile.mkdtemp()], check=True, stdout=subprocess.DEVNULL)
        cli_s = time.perf_counter() - t0

    fin = {j["id"]: j.get("finish_s") for j in ref["jobs"]}
    differ = [j["id"] for j in run["jobs"] if fin.get(j["id"]) != j.get("finish_s")]
    print(f"env: {steps} steps, {env_s:.1f} s ({1e6 * env_s / steps:.0f} us/step), "
          f"return {ret:.1f} job-hours, avg JCT {run['avg_jct_s'] / 3600:.4f} h")
    print(f"coda.simulate: {sim_s:.1f} s, avg JCT {ref['avg_jct_s'] / 3600:.4f} h; "
          f"coda simulate (CLI, whole process): {cli_s:.1f} s")
    print(f"jobs: {len(run['jobs'])}, finish times that differ: {len(differ)}; env / simulate time "
          f"{env_s / sim_s:.2f}")
    if a.csv:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a", encoding="utf-8") as f:
            if new:
                f.write("trace,cluster,jobs,steps,env_s,simulate_s,cli_s,env_over_cli,"
                        "us_per_step,finish_times_differing\n")
            f.write(f"{a.trace},{'own' if a.whole else a.cluster},{len(run['jobs'])},{steps},"
                    f"{env_s:.2f},{sim_s:.2f},{cli_s:.2f},{env_s / cli_s:.3f},"
                    f"{1e6 * env_s / steps:.0f},{len(differ)}\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
