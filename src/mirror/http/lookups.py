"""Host names looked up for a run: once each however many requests wait, some ahead of the
requests (the hosts a page's HTML loads from, while it is extracted), none again that an earlier
run found not to exist, and all given up when the run's end comes."""

from __future__ import annotations

import asyncio
import functools
import re
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from .gate import Reach, reach_of_ip
from .resolver import Resolver

__all__ = ["AHEAD_FAILURE_SECONDS", "DEAD_NAME_SECONDS", "LOOK_AHEAD", "Lookups", "ascii_host"]

DEAD_NAME_SECONDS = 3600.0  # how long a name found not to exist is believed, across runs (--refresh asks again)
AHEAD_FAILURE_SECONDS = 60.0  # a failed lookup ahead stands for its resources' this long (then they ask again)
LOOK_AHEAD = 32  # host names a page's HTML gets looked up ahead (a hostile page naming thousands asks for 32)
# What a page's HTML loads from another host: `//host` after src, srcset, a lazy attribute
# (data-src, data-actualsrc, data-original, ...) or poster, or in a <link href> (stylesheets);
# links to other pages are not fetched. Two steps: finding "//" is fast, the attribute is checked after.
_SLASHES_HOST = re.compile(rb"//([a-zA-Z0-9.-]+)")
_RESOURCE_ATTRIBUTE = re.compile(rb"(?:src|srcset|original|poster|(href))\s*=\s*[\"']?\s*(?:https?:)?$", re.IGNORECASE)


def ascii_host(host: str) -> str:
    """A host name as it goes to the resolver and to `connect`: IDNA's ASCII form, lower case."""
    if host.isascii():
        return host.lower()
    return httpx.URL(f"http://{host}/").raw_host.decode("ascii").lower()


class Lookups:
    def __init__(
        self, resolver: Resolver, dead_names: dict[str, float] | None, look_ahead: bool, on_resolved: Callable[[str], None] = lambda name: None
    ):
        """`on_resolved(name)` is told of each name the resolver gave addresses (ahead or not)."""
        self._on_resolved = on_resolved
        self.addresses: dict[str, list[str]] = {}  # ASCII host name -> the addresses looked up (and checked)
        self.reach: dict[str, Reach] = {}  # a host (name or address) -> where it is
        self._names = resolver
        self._lookups: dict[str, asyncio.Future] = {}  # name -> the lookup under way
        self._look_ahead = look_ahead
        self._ahead: dict[str, tuple[BaseException, float] | None] = {}  # names looked up ahead -> how and when it failed (None: not yet)
        self._failed_names: set[str] = set()  # names whose lookup failed in this run
        self._dead = dict(dead_names or {})
        self.nxdomain: dict[str, float] = {}  # names that did not exist in this run -> until when to believe it
        self.deferring = False  # the run's pages are all recorded: lookups still under way are given up

    def known(self, host: str) -> Reach | None:
        """Where `host` is if that is known without asking: looked up already, or an address."""
        known = self.reach.get(host)
        if known is None:
            try:
                known = self.reach[host] = reach_of_ip(host)
            except ValueError:  # a name
                pass
        return known

    def ahead_failure(self, name: str, resource: bool) -> BaseException | None:
        """The failure of `name`'s lookup ahead, if a `resource` is to take it (a recent one)."""
        if name not in self._ahead:
            return None
        failed = self._ahead.pop(name)  # a request waits for it now, or it failed while none did
        if failed is not None and resource and time.monotonic() - failed[1] < AHEAD_FAILURE_SECONDS:
            return failed[0]
        return None  # (a page, or an address check, asks again)

    def lookup(self, name: str) -> asyncio.Future | None:
        """The lookup of `name` under way, started if need be; None once the run's end gave them up."""
        lookup = self._lookups.get(name)
        if lookup is None and self.deferring:
            return None
        if lookup is None:
            lookup = self._start(name)
        return lookup

    def _start(self, name: str) -> asyncio.Future:
        lookup = self._lookups[name] = asyncio.ensure_future(self._lookup(name))
        lookup.add_done_callback(functools.partial(self._looked_up, name))
        return lookup

    def _looked_up(self, host: str, lookup: asyncio.Future) -> None:
        self._lookups.pop(host, None)
        if lookup.cancelled():
            self._ahead.pop(host, None)
            return
        failed = lookup.exception()  # retrieved: a lookup everyone stopped waiting for is not an error to log
        if failed is None:
            self.reach.setdefault(host, lookup.result())  # for the requests to come (one waiting sets it too)
            self._on_resolved(host)
            return
        self._failed_names.add(host)  # not looked up ahead again in this run (a request may ask itself)
        if host in self._ahead:
            self._ahead[host] = (failed, time.monotonic())

    def look_up_ahead(self, html_head: bytes, base: str) -> None:
        """Start looking up the host names `html_head` (the start of a page's HTML, decoded) loads
        resources from, while the page is extracted: when its images' requests come, their
        lookups are done or under way. At most LOOK_AHEAD names a page; the requests apply the
        address rules, this only asks early."""
        if not self._look_ahead or self.deferring:
            return
        for name in _resource_hosts(html_head, (urlsplit(base).hostname or "").lower()):
            try:
                reach_of_ip(name)
                continue  # an address: nothing to look up
            except ValueError:
                pass
            if (
                name in self.reach
                or name in self._lookups
                or name in self._ahead
                or name in self._failed_names
                or self._dead.get(name, 0) > time.time()
            ):
                continue
            self._ahead[name] = None
            self._start(name)

    async def _lookup(self, host: str) -> Reach:
        """Look `host` up, keep its addresses for the connections to it, and say where it is
        (the most private of them). A name an earlier run found not to exist is not asked again
        (until its time runs out); one found so now is noted for the next run."""
        name = ascii_host(host)
        if self._dead.get(name, 0) > time.time():
            raise socket.gaierror(socket.EAI_NONAME, "no such host (so an earlier run was told; --refresh asks again)")
        if name in self.nxdomain:
            raise socket.gaierror(socket.EAI_NONAME, "no such host (so the resolver said earlier in this run)")
        try:
            addresses = await self._names.resolve(name)
        except socket.gaierror as exc:
            if exc.errno == socket.EAI_NONAME:
                self.nxdomain[name] = time.time() + DEAD_NAME_SECONDS
            raise
        self.addresses[name] = addresses
        return max(reach_of_ip(address) for address in addresses)

    def defer(self, deferring: bool = True) -> None:
        """Give up the lookups under way, and any asked for from now (or ask again)."""
        self.deferring = deferring
        for lookup in list(self._lookups.values()) if deferring else ():
            lookup.cancel()

    def cancel(self) -> None:
        for lookup in list(self._lookups.values()):  # lookups ahead no request waits for
            lookup.cancel()

    def close(self) -> None:
        self._names.close()


def _resource_hosts(html_head: bytes, own: str) -> list[str]:
    """The other hosts (at most LOOK_AHEAD) that `html_head` loads images and stylesheets from."""
    names: list[str] = []
    for match in _SLASHES_HOST.finditer(html_head):
        start = match.start()
        attribute = _RESOURCE_ATTRIBUTE.search(html_head[max(0, start - 30) : start])
        if attribute is None:
            continue
        if attribute[1]:  # href: only a stylesheet's or a preload's <link> (not canonical, alternate, ...)
            tag = html_head.rfind(b"<", 0, start)
            end = html_head.find(b">", start)
            element = html_head[tag + 1 : end if end >= 0 else len(html_head)].lower()
            if not element.startswith(b"link") or not (b"stylesheet" in element or b"preload" in element):
                continue
        try:
            name = ascii_host(match[1].decode("ascii").lower().rstrip("."))
        except (UnicodeError, ValueError):
            continue
        if name and name != own and "." in name and name not in names:
            names.append(name)
            if len(names) == LOOK_AHEAD:
                break
    return names
