"""``coda.ClusterEnv`` (``gymnasium.make("coda/Cluster-v0", ...)``): coda's simulator stepped one
decision at a time, as the hierarchical policy decides a round.

Each round is decided in three kinds of step, each a choice among ``slots`` padded slots
(``Discrete(slots)``) with :meth:`ClusterEnv.action_masks` saying which are valid (the
convention of sb3-contrib's MaskablePPO):

* **pick** — which job level 1 decides next (slot ``i``: the ``i``-th undecided job in the
  round; the last slot: every job not picked waits). Jobs are placed in the order picked.
* **option** — the picked job's allocation (slot ``k``: its ``k``-th option of workers, PS,
  mode and GPU type; the last slot: wait). Asked again, options tried masked, when the option
  chosen does not fit (its fallback).
* **place** — level 2: the server for the job's next workers, among the candidate servers.

The steps drive coda's own decoding (masks and the shared packer), so no action sequence makes
an invalid schedule. A round's schedule is back-filled (``backfill=True``) as every coda policy's
is, then applied. Observations are ``(slots, obs_width)`` float32 arrays: a slot holds the
features the learned policy sees for that job, option or server; the last three columns say
the step's kind. Rewards (``reward="jct"``): minus the job-hours the round's jobs spend in the
system until the next round, paid at the step that ends the round — an episode's return is
minus its jobs' total time in system; ``reward="efficiency"``: the placement efficiency of the
jobs level 2 placed. ``hints=True`` puts coda's learned policy's greedy answer in
``info["hint"]`` (and :meth:`ClusterEnv.policy_action`): following it reproduces ``coda
simulate --policy learned --policy-samples 1 --cpu-mem fixed``.

Constructed as the command line is called: ``gymnasium.make("coda/Cluster-v0",
trace="philly", cluster="4x8", take=50)``; any ``coda simulate`` flag (underscores) passes
through. Jobs decide at their demand (``cpu_mem="fixed"``). An action outside the mask is
replaced by the step's last valid slot and flagged (``info["masked_action"]``), so an agent
that ignores masks still runs; ``strict=True`` makes it an error instead.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import _native


_PHASES = {"pick": 0, "option": 1, "place": 2}


class ClusterEnv(gym.Env):
    """coda's simulator as a Gymnasium environment (see the module docs)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace: str = "philly",
        cluster: Optional[str] = "4x8",
        take: Optional[int] = 50,
        *,
        slots: int = 512,
        reward: str = "jct",
        backfill: bool = True,
        hints: bool = False,
        strict: bool = False,
        seed: int = 0,
        render_mode: Optional[str] = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if render_mode is not None:
            raise _native.CodaError(f"env: render_mode {render_mode!r}: the environment has none")
        spec = {"trace": trace, "cluster": cluster, "take": take, "seed": seed,
                "cpu_mem": "fixed"}
        spec.update(options)
        self._spec = {k: v for k, v in spec.items() if v is not None}
        self._opts = {"slots": slots, "reward": reward, "backfill": backfill, "hints": hints}
        self._slots = slots
        self._strict = strict
        self._width = _native.obs_width()
        self.action_space = spaces.Discrete(slots)
        big = np.finfo(np.float32).max
        self.observation_space = spaces.Box(
            low=-big, high=big, shape=(slots, self._width), dtype=np.float32
        )
        self._episode = None
        self._mask = np.zeros(slots, dtype=bool)
        self._info: dict = {}
        self.run: Optional[dict] = None
        """The finished episode's metrics (``coda simulate --json``'s keys and ``jobs``)."""

    def _unpack(self, out) -> tuple[np.ndarray, float, bool, dict]:
        obs_b, mask_b, phase, job, hint, time_s, reward, done = out
        # The used slots come from coda; the rest are padding with the step's kind one-hot.
        obs = np.zeros((self._slots, self._width), dtype=np.float32)
        rows = np.frombuffer(obs_b, dtype=np.float32).reshape(-1, self._width)
        obs[: len(rows)] = rows
        if phase in _PHASES:
            obs[len(rows):, self._width - 3 + _PHASES[phase]] = 1.0
        self._mask = np.frombuffer(mask_b, dtype=np.uint8).astype(bool)
        self._info = {"phase": phase, "job": job, "time_s": time_s, "hint": hint}
        terminated = done is not None
        if terminated:
            self.run = json.loads(done)
            self._info["run"] = self.run
        return obs, float(reward), terminated, self._info

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Starts an episode: the trace's jobs on the cluster, from the first round. ``seed``
        (the trace's model assignment and every random choice) defaults to the constructor's."""
        super().reset(seed=seed)
        spec = dict(self._spec)
        if seed is not None:
            spec["seed"] = seed
        self.run = None
        self._episode, out = _native.NativeEpisode.start(json.dumps(spec), json.dumps(self._opts))
        obs, _, terminated, info = self._unpack(out)
        if terminated:
            raise _native.CodaError("env: the episode has no round to decide")
        return obs, dict(info)

    def step(self, action):
        """Answers the current decision with slot ``action``. A masked slot becomes the last
        valid one (stop, wait, or the last candidate), with ``info["masked_action"]`` set;
        with ``strict=True`` it is a ``CodaError`` that changes nothing."""
        if self._episode is None:
            raise _native.CodaError("env: call reset() first")
        action = int(action)
        masked = not (0 <= action < self._slots and self._mask[action])
        if masked:
            if self._strict:
                raise _native.CodaError(
                    f"env: action {action} is masked in this {self._info['phase']} step "
                    "(action_masks() says which are valid)"
                )
            # An unmasked agent's invalid choice: the last valid slot (stop, wait, or the last
            # candidate server), flagged in info.
            action = int(np.flatnonzero(self._mask)[-1])
        obs, reward, terminated, info = self._unpack(self._episode.step(action))
        info["masked_action"] = masked
        if terminated:
            self._episode = None
        return obs, reward, terminated, False, dict(info)

    def action_masks(self) -> np.ndarray:
        """The valid slots of the current step (``slots`` booleans)."""
        return self._mask.copy()

    def policy_action(self) -> int:
        """coda's learned policy's greedy answer to the current step (needs ``hints=True``)."""
        hint = self._info.get("hint")
        if hint is None:
            raise _native.CodaError(
                "env: no hint here (construct with hints=True; an option or job beyond the "
                "slots shown cannot be hinted)"
            )
        return int(hint)
