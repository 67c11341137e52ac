"""The Python quick start (run from the repository root after ``bash scripts/run.sh`` or
``bash scripts/setup_python.sh``: ``.venv-py/bin/python examples/python/quick_start.py``)."""

import gymnasium as gym
import numpy as np

import coda

# One round: the learned policy (milliseconds) and the exact program (a proven optimum).
snap = coda.load("examples/instances/small.json")
fast = coda.schedule(snap, scheduler="learned")
exact = coda.solve(snap, time_limit=30)
print(f"learned: {len(fast['assignments'])} jobs run, objective {coda.score(snap, fast):.4f}")
print(f"exact:   {exact['report']['status']}, objective {exact['report']['objective']:.4f}, "
      f"gap {exact['report']['gap']:.1e}")

# A trace replay: the same keys and values as `coda simulate --json`, plus per-job records.
run = coda.simulate("philly", policy="learned", cluster="4x8", take=100)
print(f"philly, 100 jobs on 4x8: avg JCT {run['avg_jct_s'] / 3600:.2f} h, "
      f"makespan {run['makespan_s'] / 3600:.1f} h, {len(run['jobs'])} job records")

# Errors name the field (and the file and line when there is one).
try:
    coda.simulate("philly", take=0)
except coda.CodaError as e:
    print(f"CodaError: {e}")

# The Gymnasium environment: random masked actions always give a valid schedule.
env = gym.make("coda/Cluster-v0", trace="philly", cluster="4x8", take=30)
obs, info = env.reset(seed=0)
rng = np.random.default_rng(0)
steps, ret, done = 0, 0.0, False
while not done:
    action = rng.choice(np.flatnonzero(env.unwrapped.action_masks()))
    obs, reward, done, _, info = env.step(action)
    steps, ret = steps + 1, ret + reward
print(f"env: {steps} steps, return {ret:.1f} job-hours, avg JCT "
      f"{env.unwrapped.run['avg_jct_s'] / 3600:.2f} h (random masked actions)")
