"""Which worker owns which server. The pending pages are split by server before the run, the
largest first onto the least loaded shard, so that one server's pages are on one worker at a
time; a server first met during the run (an image host) goes to the least loaded shard then. A
worker is started when its shard is first used, and replaced when it dies: its requests go to
the new one, and the old one's WARC files are repaired for the run to close."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .._types import PageToFetch
from ..http.gate import server_key

__all__ = ["Shards"]

Start = Callable[[int, str], Any]  # (shard, prefix of its WARC files) -> a new worker (an actor handle)


class Shards:
    def __init__(self, count: int, pages: list[PageToFetch], start: Start, delay: float):
        self.start, self.delay = start, delay
        self.owner: dict[str, int] = {}
        self.load = [0] * count  # pages (and servers met later) per shard
        for server, pages_of_server in Counter(server_key(page.url) for page in pages).most_common():
            shard = self.load.index(min(self.load))
            self.owner[server] = shard
            self.load[shard] += pages_of_server
        self.workers: list[Any] = [None] * count
        self.prefixes: list[str] = [""] * count
        self.generations = [0] * count
        self.ready_at = [0.0] * count  # a replacement waits --delay after its predecessor's death
        self.dead: list[str] = []  # WARC file prefixes of workers that died
        self.deaths = 0  # workers that died (a replacement is started when the shard is next used)

    def shard_of(self, url: str) -> int:
        server = server_key(url)
        if server not in self.owner:
            shard = self.owner[server] = self.load.index(min(self.load))
            self.load[shard] += 1
        return self.owner[server]

    def pages_of(self, shard: int, pages: list[PageToFetch]) -> list[PageToFetch]:
        return [page for page in pages if self.owner.get(server_key(page.url)) == shard]

    async def worker(self, shard: int) -> tuple[Any, int]:
        """The shard's worker (started if it was not) and its generation."""
        if self.workers[shard] is None:
            self.prefixes[shard] = f"mirror-{secrets.token_hex(3)}"  # its own files, whatever node and pid it gets
            self.workers[shard] = self.start(shard, self.prefixes[shard])
        wait = self.ready_at[shard] - time.monotonic()
        if wait > 0:  # the dead worker may have sent a request to one of these servers just before it died
            await asyncio.sleep(wait)
        return self.workers[shard], self.generations[shard]

    def died(self, shard: int, generation: int) -> None:
        """The shard's worker of that generation died: the next call starts another (once, however
        many of its calls fail)."""
        if self.generations[shard] != generation:
            return
        self.dead.append(self.prefixes[shard])
        self.workers[shard] = None
        self.generations[shard] += 1
        self.ready_at[shard] = time.monotonic() + self.delay + 0.05
        self.deaths += 1

    def alive(self) -> list[Any]:
        return [worker for worker in self.workers if worker is not None]
