"""One shard's worker: a Ray actor holding an HTTP `Client` of its own, and its own WARC files in
the shared archive folder. Every request to the servers the shard owns comes here, so that
server's gate (`--per-host`, `--delay`) paces them exactly as in a run on one machine."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from http.cookiejar import Cookie, CookieJar
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._types import Exchange
from ..http.client import Client
from ..http.gate import Budget, Reach
from ..warc import CaptureWriter

__all__ = ["FetchWorker", "Health"]


@dataclass
class Health:
    """What the run reads of a client's health, sent back with each answer."""

    reached: bool = False  # some server answered
    offline: bool = False  # nothing reached and several names failed
    network_works: bool = False  # a server off this machine answered, or a name resolved
    looks_offline: bool = False  # the client's judgement of its failed lookups (`HostHealth.looks_offline`)
    down: dict[str, Exchange] = field(default_factory=dict)  # the answer's hosts that are down for the run
    nxdomain: dict[str, float] = field(default_factory=dict)  # names found not to exist since the last answer


class FetchWorker:
    """Made remote by `shards` (an async actor: its requests wait at their gates together)."""

    def __init__(
        self,
        archive_dir: str,
        rotate_bytes: int,
        prefix: str,
        settings: dict[str, Any],
        cookies: list[Cookie] | None,
        info: dict[str, str] | None = None,
    ):
        self.writer = CaptureWriter(Path(archive_dir), rotate_bytes=rotate_bytes, prefix=prefix, info=info)
        self.settings, self.cookies = settings, cookies
        self.client: Client | None = None
        self.budgets: dict[tuple, Budget] = {}
        self.calls: set[asyncio.Task] = set()
        self.reported = 0  # names of `nxdomain` sent back so far

    def _client(self) -> Client:
        """Made on the first call, in the actor's event loop, which it uses."""
        if self.client is None:
            jar = None
            if self.cookies is not None:
                jar = CookieJar()
                for cookie in self.cookies:
                    jar.set_cookie(cookie)
            self.client = Client(self.writer, cookies=jar, **self.settings)
        return self.client

    async def get(self, url: str, headers: dict[str, str] | None, budget: tuple | None, reach: Reach | None, same_reach: bool):
        """`Client.get`, and the health it leaves (`budget`: the resources' budget, by its terms)."""
        client = self._client()
        spent = None if budget is None else self.budgets.setdefault(budget, Budget(*budget))
        exchange = await self._tracked(client.get(url, headers, budget=spent, reach=reach, same_reach=same_reach))
        return exchange, self._health(exchange)

    async def get_json(self, url: str) -> Any:
        return await self._tracked(self._client().get_json(url))

    async def reach_of(self, url: str) -> Reach | Exchange:
        return await self._tracked(self._client().reach_of(url))

    def in_flight(self) -> dict[str, float]:
        """Page requests under way past their gate -> seconds since they started."""
        now = time.monotonic()
        return {url: now - since for url, since in list((self.client.in_flight if self.client else {}).items())}

    def defer_lookups(self, deferring: bool) -> None:
        self._client().defer_lookups(deferring)

    async def close(self) -> tuple[list[str], list[str]]:
        """Stop what is under way, close the client and the WARC files: (files written, files a failed
        write may have damaged)."""
        for task in list(self.calls):
            task.cancel()
        await asyncio.gather(*self.calls, return_exceptions=True)
        if self.client is not None:
            await self.client.aclose()
        self.writer.close()
        return self.writer.opened, self.writer.unfinished

    async def _tracked(self, work):
        task = asyncio.ensure_future(work)
        self.calls.add(task)
        try:
            return await task
        finally:
            self.calls.discard(task)

    def _health(self, exchange: Exchange) -> Health:
        client = self.client
        assert client is not None
        hosts = {_netloc(url) for url in (exchange.url, exchange.final_url, *exchange.redirects)}
        nxdomain = list(client.nxdomain.items())
        new, self.reported = dict(nxdomain[self.reported :]), len(nxdomain)
        down = {host: client.down[host] for host in hosts if host in client.down}
        return Health(client.reached, client.offline, client.network_works, client.health.looks_offline(), down, new)


def _netloc(url: str) -> str:
    return (urlsplit(url).netloc or "").lower()
