"""Where an address is, and the per-host gate every request to a server waits at."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from urllib.parse import urlsplit

__all__ = ["Budget", "HostGate", "Reach", "is_ip", "reach_of_ip", "server_key"]


class Reach(IntEnum):
    """Where an address is, from the widest audience to the narrowest."""

    PUBLIC = 0
    PRIVATE = 1  # intranet, link-local, carrier NAT, ...
    LOOPBACK = 2  # this machine


def reach_of_ip(text: str) -> Reach:
    ip = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_unspecified:  # 0.0.0.0 reaches this machine too
        return Reach.LOOPBACK
    return Reach.PUBLIC if ip.is_global else Reach.PRIVATE


def is_ip(url: str) -> bool:
    try:
        reach_of_ip(urlsplit(url).hostname or "")
        return True
    except ValueError:
        return False


@functools.lru_cache(maxsize=4096)
def server_key(url: str) -> str:
    """The server `url` names, one key however the URL writes it (`Example.com`, `example.com:80`,
    `user@example.com` are one server, and its pages and their images wait at the same gate)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"


@dataclass
class Budget:
    """How hard to try: pages and the resources they show get separate budgets,
    so a page never waits behind an image."""

    timeout: float
    retries: int
    concurrency: int
    backoff: float = 0.5
    semaphore: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.semaphore = asyncio.Semaphore(self.concurrency)


class HostGate:
    """At most `per_host` requests in flight to one host, starting `delay` apart.

    "Starting" is when the request headers have gone out (httpcore's trace), after the
    shared concurrency slot is taken, so the server sees the spacing we promise.
    """

    def __init__(self, per_host: int, delay: float):
        self._slots = asyncio.Semaphore(per_host)
        self._order = asyncio.Lock()
        # a little more than asked, so that network jitter does not bring two requests
        # closer than `delay` at the server (5%, at most 20 ms)
        self._delay = delay + min(0.02, delay * 0.05)
        self._last_start = float("-inf")
        self.closed = False
        self._closing = asyncio.Event()

    def close(self) -> None:
        """The host is down for this run: its queue goes through at once, to be refused."""
        self.closed = True
        self._closing.set()

    @asynccontextmanager
    async def turn(self, shared: asyncio.Semaphore) -> AsyncIterator[_Turn]:
        if self.closed:
            yield _Turn(self)
            return
        async with self._slots:
            turn = _Turn(self)
            if self.closed:
                yield turn
                return
            if self._delay > 0:
                await self._order.acquire()
                turn.holding = True
            try:
                loop = asyncio.get_running_loop()
                wait = self._last_start + self._delay - loop.time()
                if wait > 0 and not self.closed:
                    with contextlib.suppress(TimeoutError):  # closing wakes the queue at once
                        await asyncio.wait_for(self._closing.wait(), wait)
                async with shared:
                    try:
                        yield turn
                    finally:
                        turn.started()  # a request that never sent its headers still counts as a start
            finally:
                turn.started()


class _Turn:
    def __init__(self, gate: HostGate):
        self.gate, self.holding = gate, False

    def started(self) -> None:
        if self.holding:
            self.holding = False
            self.gate._last_start = asyncio.get_running_loop().time()
            self.gate._order.release()

    async def trace(self, event: str, info: dict) -> None:
        if event.endswith("send_request_headers.complete"):  # the request line is on its way
            self.started()
