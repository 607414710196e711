"""Connecting to Ray, and the engine a run uses there: the cluster that `RAY_ADDRESS` names (Ray's
own convention), or a Ray instance of this command's own when it is unset. `import ray` happens
here only, when `--ray` is given: no other command pays for it."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._types import PageToFetch
from ..extract.pool import StoppableExecutor
from .client import ClusterWarcs, ShardedClient
from .tasks import RayExecutor

__all__ = ["Cluster", "ClusterError", "connect"]

# what the workers need of this process's environment (the rest is the nodes' own: proxies, paths)
PASSED_ON = ("MIRROR_NAMESERVERS",)


class ClusterError(Exception):
    """Ray is not installed, or the cluster cannot be reached."""


class Cluster:
    """A `fetch.engine.Engine` on a Ray cluster: requests on `shards` workers, each owning a share of
    the servers, extractions as tasks on the cluster's CPUs; the run that records them is here.
    Its runs are over HTTP only (`--browser never`): a browser pass on the cluster's nodes is not built."""

    def __init__(self, ray, shards: int | None = None):
        self.ray = ray
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.shards = shards or self.cpus
        self.clients: list[ShardedClient] = []

    def pool(self, workers: int | None) -> StoppableExecutor:
        return RayExecutor(self.ray)

    def writer(self, archive_dir: Path, rotate_bytes: int, info: dict[str, str] | None = None) -> ClusterWarcs:
        return ClusterWarcs(archive_dir, rotate_bytes, info)

    def client(self, writer: ClusterWarcs, pages: list[PageToFetch], settings: dict[str, Any]) -> ShardedClient:
        self.clients.append(ShardedClient(self.ray, writer, pages, settings, self.shards))
        return self.clients[-1]

    @property
    def deaths(self) -> int:
        """Fetching workers that died, over this command's runs (their requests were made again)."""
        return sum(client.shards.deaths for client in self.clients)


@contextmanager
def connect(shards: int | None = None) -> Iterator[Cluster]:
    """The cluster for one command; disconnected (a local instance stopped, the workers this
    command started ended) when it is done, however it ends."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray, which is not installed: pip install 'mirror[cluster]'") from None
    address = os.environ.get("RAY_ADDRESS") or "local"  # (never a cluster someone else started on this machine)
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    # Ray's driver prints what it hears of its workers' deaths on stdout, where `--json` writes:
    # while connected, its stdout is stderr (the command's own output comes after).
    with contextlib.redirect_stdout(sys.stderr):
        _init(ray, address, env)
        try:
            yield Cluster(ray, shards)
        finally:
            ray.shutdown()


def _init(ray, address: str, env: dict[str, str]) -> None:
    here = os.getcwd()
    # Ray puts the driver's working folder on its workers' import path: a cloned reading list's
    # `json.py` would run in every worker. The driver connects from / instead.
    os.chdir(os.path.abspath(os.sep))
    stopping = signal.getsignal(signal.SIGTERM)  # ray.init makes SIGTERM a bare exit; mirror's stops as Ctrl-C does
    try:
        ray.init(
            address=address,
            logging_level=logging.ERROR,
            log_to_driver=False,
            runtime_env={"env_vars": env} if env else None,
            **({"include_dashboard": False} if address == "local" else {}),
        )
    except Exception as exc:  # noqa: BLE001 - Ray says why in many ways (ConnectionError, RuntimeError, ValueError)
        where = "a local Ray instance" if address == "local" else f"the Ray cluster at {address}"
        raise ClusterError(f"cannot start or reach {where}: {type(exc).__name__}: {str(exc)[:500]}") from None
    finally:
        os.chdir(here)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, stopping)
