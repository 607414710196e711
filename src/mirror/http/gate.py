"""Where an address is, and the per-host gate every request to a server waits at."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
from collections import deque
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

    Pages and resources (a page's images and stylesheets, asked for once it is recorded) wait
    in two queues and take the host's turns in alternation while both wait: a site's images
    come in between its pages, not all after the last one (a run's tail), and a page still
    comes every other turn. Within a queue, first come, first served.
    """

    def __init__(self, per_host: int, delay: float):
        self._free = per_host
        self._waiting: tuple[deque[asyncio.Future], deque[asyncio.Future]] = (deque(), deque())  # pages', resources'
        self._last = True  # whose turn the last slot was (a resource's: a page goes first)
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
        for queue in self._waiting:
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)

    async def _slot(self, resource: bool) -> None:
        """One of the host's `per_host` slots (`_release` gives it back)."""
        if self._free > 0 and not any(self._waiting):
            self._free -= 1
            self._last = resource
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[resource].append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and not self.closed:
                self._release()  # given the slot as it was stopped: the next one takes it
            elif waiter in self._waiting[resource]:
                self._waiting[resource].remove(waiter)
            raise

    def _release(self) -> None:
        self._free += 1
        while self._free > 0 and not self.closed:
            for resource in (not self._last, self._last):  # the other queue first
                queue = self._waiting[resource]
                while queue and queue[0].done():  # stopped while it waited (it leaves the queue itself too)
                    queue.popleft()
                if queue:
                    self._free -= 1
                    self._last = resource
                    queue.popleft().set_result(None)
                    break
            else:
                return

    @asynccontextmanager
    async def turn(self, shared: asyncio.Semaphore, *, resource: bool = False) -> AsyncIterator[_Turn]:
        """A turn at the host: a slot, then the host's delay, then the run's shared slot."""
        if self.closed:
            yield _Turn(self)
            return
        await self._slot(resource)
        try:
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
        finally:
            if not self.closed:
                self._release()


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
