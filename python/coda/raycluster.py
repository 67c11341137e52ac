"""Ray clusters that bring their own credentials: nothing is read from or written to the home
folder (``~/.ray``), so a run on a fresh machine behaves as one on a machine that ran Ray before.

Ray 2.60 authenticates a cluster started with ``ray start`` by a shared token: every process of
the cluster, and every client that joins it, must see ``RAY_AUTH_MODE=token`` and the same token
(``RAY_AUTH_TOKEN`` or a file named by ``RAY_AUTH_TOKEN_PATH``); otherwise it falls back to
``~/.ray/auth_token``, which only exists where someone ran ``ray get-auth-token --generate``.
A plain local ``ray.init()`` makes a token itself, but saves it into ``~/.ray``.

* :func:`credentials` writes a fresh random token into a folder of the caller's (mode 0600) and
  returns the environment variables that hand it to Ray.
* :class:`LocalCluster` starts a head and further nodes on this machine (``ray start``), each
  with that environment, and stops them on exit: the test suite's and the benchmarks'
  two-node cluster. ``python -m coda.raycluster up|down`` does the same from a shell script and
  writes ``env.sh`` for the processes that join it.

For a cluster of several machines, see ``python/README.md`` (the token file must reach every
node and every client).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from typing import Iterable, Mapping, Optional

TOKEN_FILE = "ray_auth_token"


def credentials(folder: str) -> dict[str, str]:
    """Writes a new random token into ``folder/ray_auth_token`` (readable by its owner only) and
    returns the environment that makes Ray use it: ``RAY_AUTH_MODE=token`` and
    ``RAY_AUTH_TOKEN_PATH``. A token file already there is kept (a restarted ``up`` rejoins)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.abspath(os.path.join(folder, TOKEN_FILE))
    if not os.path.exists(path):
        # 32 random bytes as hex, as `ray get-auth-token --generate` makes.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32))
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": path}


def use_credentials(env: Mapping[str, str]) -> None:
    """Puts Ray's credentials into this process's environment, so that ``ray.init()`` and every
    process it starts see them (call it before ``ray.init()``). An inline ``RAY_AUTH_TOKEN``
    would take precedence over the file, so it is removed."""
    os.environ.pop("RAY_AUTH_TOKEN", None)
    os.environ.update(env)
    if "ray" in sys.modules:
        # Ray caches its settings, the authentication mode among them, when it is imported;
        # re-read them as Ray does when it turns token authentication on itself.
        from ray._raylet import Config

        Config.initialize("")


def has_token(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether the environment names a token (inline or by file); ``~/.ray`` is not looked at."""
    e = os.environ if environ is None else environ
    return bool(e.get("RAY_AUTH_TOKEN")) or bool(e.get("RAY_AUTH_TOKEN_PATH"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_command() -> str:
    # The `ray` installed beside this interpreter (a virtual environment's bin), else PATH's.
    ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray is None:
        raise RuntimeError("the `ray` command is not installed (pip install 'ray==2.60.0')")
    return ray


def stop_all(environ: Optional[Mapping[str, str]] = None) -> None:
    """``ray stop --force``: every Ray process of this user on this machine."""
    subprocess.run([_ray_command(), "stop", "--force"], env=environ, capture_output=True)


class LocalCluster:
    """A Ray cluster of ``nodes`` nodes with ``cpus`` CPUs each on this machine, started with
    ``ray start`` and its own token in ``folder``. ``address`` is what ``ray.init(address=...)``
    and ``python -m coda.distributed --address`` join; ``env`` is the environment they need.

    ``stop()`` runs ``ray stop --force``, which stops every Ray process of this user on this
    machine (Ray offers no narrower stop for ``ray start``'s processes)."""

    def __init__(self, folder: str, nodes: int = 2, cpus: int = 1,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        if nodes < 1 or cpus < 1:
            raise ValueError(f"a local cluster needs nodes >= 1 and cpus >= 1 (got {nodes}, {cpus})")
        self.folder = os.path.abspath(folder)
        self.nodes, self.cpus = nodes, cpus
        base = dict(os.environ if environ is None else environ)
        base.pop("RAY_AUTH_TOKEN", None)
        base.pop("RAY_ADDRESS", None)
        self.env = {**base, **credentials(self.folder)}
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._ray = _ray_command()

    def _run(self, *args: str) -> None:
        r = subprocess.run([self._ray, *args], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"`ray {' '.join(args)}` failed ({r.returncode}):\n{r.stderr[-4000:]}")

    def start(self) -> "LocalCluster":
        common = [f"--num-cpus={self.cpus}", "--disable-usage-stats"]
        try:
            self._run("start", "--head", f"--port={self.port}", "--node-ip-address=127.0.0.1",
                      "--include-dashboard=false", *common)
            for _ in range(self.nodes - 1):
                self._run("start", f"--address={self.address}", "--node-ip-address=127.0.0.1",
                          *common)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_all(self.env)

    def env_sh(self) -> str:
        """Shell lines that let a process join this cluster."""
        keep = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")
        lines = [f"export {k}={self.env[k]}" for k in keep]
        lines.append(f"export CODA_RAY_ADDRESS={self.address}")
        return "\n".join(lines) + "\n"

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: Optional[Iterable[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m coda.raycluster",
        description="A Ray cluster of several nodes on this machine with its own token.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start it; prints {address, env_file} as JSON")
    up.add_argument("--dir", required=True, help="folder for the token and env.sh")
    up.add_argument("--nodes", type=int, default=2)
    up.add_argument("--cpus", type=int, default=1, help="CPUs per node")
    down = sub.add_parser("down", help="stop every Ray process of this user on this machine")
    down.add_argument("--dir", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "up":
        c = LocalCluster(args.dir, args.nodes, args.cpus)
        t0 = time.perf_counter()
        c.start()
        env_file = os.path.join(c.folder, "env.sh")
        with open(env_file, "w", encoding="utf-8") as f:
            f.write(c.env_sh())
        print(json.dumps({"address": c.address, "env_file": env_file, "nodes": c.nodes,
                          "start_s": round(time.perf_counter() - t0, 1)}))
    else:
        stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
