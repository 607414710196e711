"""The fetch run's client on a cluster: each request goes to the worker that owns its server
(`shards`), whose own `Client` makes it and writes it to its own WARC files; the run here sees the
same answers, and the same health, as from a client of its own."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from .._types import Exchange, PageToFetch
from ..http.gate import Budget, Reach, server_key
from ..warc import WARC_DIR, repair
from .shards import Shards
from .worker import FetchWorker, Health

__all__ = ["ClusterWarcs", "ShardedClient"]

WORKER_RETRIES = 3  # a request whose worker died goes to its replacement; past this many deaths the page fails (a page that kills its worker)
POLL = 1.0  # seconds between asking the workers which page requests are under way (the progress display)
CLOSE_TIMEOUT = 30.0  # seconds the workers get to close their files


class ClusterWarcs:
    """The run's WARC files as the driver knows them: those the workers wrote and closed (`opened`),
    and those a failed write may have damaged (`unfinished`), known once the client is closed.
    The driver itself writes none."""

    def __init__(self, archive_dir: Path, rotate_bytes: int, info: dict[str, str] | None = None):
        self.dir, self.rotate_bytes, self.info = archive_dir / WARC_DIR, rotate_bytes, info
        self.opened: list[str] = []
        self.unfinished: list[str] = []

    def close(self) -> None:
        pass


class ShardedClient:
    """What `fetch.runner` uses of a `Client` (get, get_json, reach_of, defer_lookups, aclose, and
    the health it reads), over the shards' workers."""

    def __init__(self, ray, writer: ClusterWarcs, pages: list[PageToFetch], settings: dict[str, Any], shards: int):
        self._ray = ray
        self.writer = writer
        cookies = settings.pop("cookies", None)
        self._cookies = None if cookies is None else list(cookies)  # (a jar holds a lock: its cookies travel)
        self._settings = settings
        self._revisits = settings.pop("revisits", None) or {}
        self.shards = Shards(shards, pages, self._start, settings["delay"])
        self._actor = ray.remote(FetchWorker)
        self.in_flight: dict[str, float] = {}  # page requests under way past their gate, on every worker -> monotonic start
        self.down: dict[str, Exchange] = {}
        self.nxdomain: dict[str, float] = {}
        self._health: dict[int, Health] = {}
        self._poller: asyncio.Task | None = None

    reached = property(lambda self: any(h.reached for h in self._health.values()))
    offline = property(lambda self: not self.reached and any(h.offline for h in self._health.values()))
    network_works = property(lambda self: any(h.network_works for h in self._health.values()))

    @property
    def health(self) -> _AcrossWorkers:
        """What the run asks of the workers' clients' health at its end, as of one client's."""
        return _AcrossWorkers(self)

    def _start(self, shard: int, prefix: str):
        revisits = {url: saved for url, saved in self._revisits.items() if self.shards.owner.get(server_key(url)) == shard}
        settings = {**self._settings, "revisits": revisits or None}
        options = {"max_concurrency": 100_000, "scheduling_strategy": "SPREAD"}  # (its requests wait at their gates, not in Ray's queue)
        return self._actor.options(**options).remote(
            str(self.writer.dir.parent), self.writer.rotate_bytes, prefix, settings, self._cookies, self.writer.info
        )

    async def _call(self, url: str, method: str, *args):
        """`method(*args)` on the worker owning `url`'s server; again on its replacement if it died."""
        from ray.exceptions import RayActorError, RayTaskError

        shard = self.shards.shard_of(url)
        for attempt in range(WORKER_RETRIES + 1):
            worker, generation = await self.shards.worker(shard)
            try:
                return await getattr(worker, method).remote(*args)
            except RayActorError:
                self.shards.died(shard, generation)
                if attempt == WORKER_RETRIES:
                    raise
            except RayTaskError as exc:  # the worker's own error (a full disk): as a local client raises it
                raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None
        raise AssertionError("unreachable")

    async def get(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        budget: Budget | None = None,
        reach: Reach | None = None,
        same_reach: bool = False,
        render_for: str | None = None,
    ) -> Exchange:
        if self._poller is None:
            self._poller = asyncio.ensure_future(self._poll())
        terms = None if budget is None else (budget.timeout, budget.retries, budget.concurrency, budget.backoff)
        exchange, health = await self._call(url, "get", url, headers, terms, reach, same_reach)
        self._health[self.shards.shard_of(url)] = health
        self.down.update(health.down)
        self.nxdomain.update(health.nxdomain)
        return exchange

    async def get_json(self, url: str) -> Any:
        return await self._call(url, "get_json", url)

    async def reach_of(self, url: str, timeout: float | None = None, *, page: bool = False, resource: bool = False) -> Reach | Exchange:
        return await self._call(url, "reach_of", url)

    def defer_lookups(self, deferring: bool = True) -> None:
        for worker in self.shards.alive():
            worker.defer_lookups.remote(deferring)

    async def _poll(self) -> None:
        """The page requests under way on every worker, as the progress display reads a client's."""
        while True:
            await asyncio.sleep(POLL)
            now = time.monotonic()
            flying: dict[str, float] = {}
            for answer in await asyncio.gather(*(w.in_flight.remote() for w in self.shards.alive()), return_exceptions=True):
                if isinstance(answer, dict):
                    flying.update({url: now - age for url, age in answer.items()})
            self.in_flight.clear()  # (the same dict: the display holds it)
            self.in_flight.update(flying)

    async def aclose(self) -> None:
        """Every worker closes its files (what is under way is stopped) and is ended; a dead
        worker's files are repaired. The run marks them closed once it has finished."""
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        from ray.exceptions import RayActorError

        shards = [(shard, worker) for shard, worker in enumerate(self.shards.workers) if worker is not None]
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                closed = await asyncio.gather(*(worker.close.remote() for _, worker in shards), return_exceptions=True)
        except TimeoutError:
            closed = []
        finally:
            for _, worker in shards:
                with contextlib.suppress(Exception):
                    self._ray.kill(worker)
        for (shard, _), answer in zip(shards, closed, strict=False):
            if isinstance(answer, tuple):
                self.writer.opened += answer[0]
                self.writer.unfinished += answer[1]
            elif isinstance(answer, RayActorError):  # died after its last request
                self.shards.died(shard, self.shards.generations[shard])
        dead = [path for prefix in self.shards.dead for path in sorted(self.writer.dir.glob(f"{prefix}-*.warc.gz"))]
        await asyncio.to_thread(repair, dead)  # (cut where the worker died: the run re-fetched its pages)
        self.writer.opened += [path.name for path in dead]


class _AcrossWorkers:
    """The workers' clients' health read as one: offline when none showed the network working
    and some judged their failed lookups the machine's state."""

    def __init__(self, client: ShardedClient):
        self.client = client

    def looks_offline(self) -> bool:
        healths = self.client._health.values()
        return not any(h.network_works for h in healths) and any(h.looks_offline for h in healths)
