"""The polite HTTP client: per-host gates, whole-request deadlines, bounded bodies.

One `Exchange` is a GET with its redirects followed by hand, so that every hop
is captured to WARC and the chain is kept. Bodies are read raw and decoded
incrementally only to count their size, so a gzip bomb is refused with
bounded memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.message
import email.utils
import errno
import functools
import ipaddress
import random
import re
import socket
import ssl
import tempfile
import time
import urllib.request
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from typing import Any
from enum import IntEnum
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from . import _direct, _net
from ._resolver import Resolver, nameservers_from_env

from ._blocked import HINT, blocked_reason
from ._text import decode
from ._types import Exchange, Reason, http_error
from .warc import PAGE_HEADER, Capture, CaptureWriter, payload_coding

HEAD_BYTES = 64 * 1024  # decoded bytes kept for recognising blocked pages
OFFLINE_AFTER = 3  # distinct host names whose lookup failed, with nothing reached yet: the network is down
KEEPALIVE = 5.0  # seconds an idle connection is kept for the next request to its host (httpx's default)
DEAD_NAME_SECONDS = 3600.0  # how long a name found not to exist is believed, across runs (--refresh asks again)
SWEEP_EVERY = 5.0  # seconds between closing the connections that outlived their keep-alive
AHEAD_FAILURE_SECONDS = 60.0  # a failed lookup ahead stands for its resources' this long (then they ask again)
LOOK_AHEAD = 32  # host names a page's HTML gets looked up ahead (a hostile page naming thousands asks for 32)
# What a page's HTML loads from another host: `//host` after src, srcset, a lazy attribute
# (data-src, data-actualsrc, data-original, ...) or poster, or in a <link href> (stylesheets);
# links to other pages are not fetched. Two steps: finding "//" is fast, the attribute is checked after.
_SLASHES_HOST = re.compile(rb"//([a-zA-Z0-9.-]+)")
_RESOURCE_ATTRIBUTE = re.compile(rb"(?:src|srcset|original|poster|(href))\s*=\s*[\"']?\s*(?:https?:)?$", re.IGNORECASE)
OFFLINE_HINT = "no host name resolved in this run: check the network connection or the proxy settings"


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


class _HttpClient(httpx.AsyncClient):
    """httpx builds `response.next_request` even when not following redirects, and
    raises on a Location it cannot parse (`data:`, `http://xn--/`), losing the
    response. We follow redirects ourselves, so a bad Location is just no next request."""

    def _build_redirect_request(self, request: httpx.Request, response: httpx.Response) -> httpx.Request | None:
        try:
            return super()._build_redirect_request(request, response)
        except (httpx.InvalidURL, httpx.RemoteProtocolError, UnicodeError, ValueError, IndexError):
            return None


class Client:
    def __init__(
        self,
        writer: CaptureWriter,
        *,
        concurrency: int,
        per_host: int,
        delay: float,
        timeout: float,
        max_bytes: int,
        max_redirects: int,
        headers: dict[str, str],
        cookies: CookieJar | None,
        private_headers: dict[str, str] | None = None,
        private_hosts: frozenset[str] | None = None,
        keepalive: float = KEEPALIVE,
        resolver: Resolver | None = None,
        dead_names: dict[str, float] | None = None,
        look_ahead: bool = False,
    ):
        """`private_headers` (the user's --header values) go only to `private_hosts`
        (None: to every host). An idle connection is kept `keepalive` seconds. Names are looked
        up by `resolver` (default: c-ares with MIRROR_NAMESERVERS, else the system's), and a
        connection goes to the addresses looked up and checked, never to a second lookup's.
        `dead_names` (name -> until when, a time.time()) did not exist in an earlier run: they are
        not asked again; `nxdomain` collects this run's, for the next. With `look_ahead`, the
        host names a page's HTML loads resources from are looked up as soon as it arrives."""
        self.writer = writer
        self.per_host, self.delay = per_host, delay
        self.timeout, self.max_bytes, self.max_redirects = timeout, max_bytes, max_redirects
        self._global = asyncio.Semaphore(concurrency)
        self._gates: dict[str, HostGate] = {}
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._headers, self._cookies = headers, cookies
        self._private_headers, self._private_hosts = private_headers or {}, private_hosts
        self._tls = httpx.create_ssl_context()  # built once: it costs tens of milliseconds
        self._limits = httpx.Limits(max_connections=per_host, max_keepalive_connections=per_host, keepalive_expiry=keepalive)
        self._timeout = httpx.Timeout(timeout)
        self._timeouts = self._timeout.as_dict()  # the same per-phase limits, as httpcore takes them (direct pools)
        self._addresses: dict[str, list[str]] = {}  # ASCII host name -> the addresses looked up (and checked)
        self._backend = _net.Backend(self._addresses.get)  # connects to those, for every pool of ours
        self._pools = _direct.Pools(self._tls, self._limits, self._backend)  # for page resources (see mirror._direct)
        self._reach: dict[str, Reach] = {}
        self._proxy_answers: dict[tuple[str, str | None], bool] = {}
        self._resource_headers: dict[tuple[str, bytes], tuple[list[tuple[bytes, bytes]], list[tuple[str, str]]]] = {}
        self._lookups: dict[str, asyncio.Future] = {}  # name -> the lookup under way
        self._look_ahead = look_ahead and not _proxies_set()  # (a proxy looks names up itself)
        self._ahead: dict[str, tuple[BaseException, float] | None] = {}  # names looked up ahead -> how and when it failed (None: not yet)
        self._failed_names: set[str] = set()  # names whose lookup failed in this run
        self._names = resolver or Resolver(nameservers_from_env())
        self._dead = dict(dead_names or {})
        self.nxdomain: dict[str, float] = {}  # names that did not exist in this run -> until when to believe it
        self._deferring = False  # the run's pages are all recorded: lookups still under way are given up
        self.deferred = 0  # requests given up so (asked for by the next run)
        self.down: dict[str, Exchange] = {}  # host -> the failure that took it down for this run
        self.reached = False  # some server answered: the network works
        self._unresolved: set[str] = set()
        self._answered: set[str] = set()  # hosts that sent a response in this run
        self.offline = False
        self.in_flight: dict[str, float] = {}  # page requests under way (past their host's gate) -> time.monotonic() at start
        self._sweeper: asyncio.Task | None = None

    def _sweep_soon(self) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep())

    async def _sweep(self) -> None:
        """Close kept-alive connections past their keep-alive, every few seconds. httpcore closes
        them only when their pool is used again, and a page's images on a thousand hosts would
        each keep a socket open for the rest of the run (and run the process out of descriptors)."""
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            await self.sweep_once()

    async def sweep_once(self) -> None:
        for pool in [*self._pools.pools(), *(_pool_of(client) for client in self._clients.values())]:
            for connection in list(getattr(pool, "connections", ())):
                try:
                    if connection.has_expired():  # idle past its keep-alive: the pool would close it anyway
                        await connection.aclose()
                except Exception:  # noqa: BLE001 - a connection that broke while closing is closed
                    pass

    async def aclose(self) -> None:
        for lookup in list(self._lookups.values()):  # lookups ahead no request waits for
            lookup.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        try:
            for client in self._clients.values():
                await client.aclose()
        finally:
            try:
                await self._pools.aclose()
            finally:
                self._names.close()

    def _http(self, url: str) -> httpx.AsyncClient:
        """One connection pool per host: httpx checks every pooled connection on each request."""
        parts = urlsplit(url)
        host = (parts.netloc or "").lower()
        if host not in self._clients:
            headers = self._headers
            if self._private_hosts is None or (parts.hostname or "") in self._private_hosts:
                headers = {**headers, **self._private_headers}
            self._clients[host] = _HttpClient(
                follow_redirects=False,
                timeout=self._timeout,
                headers=headers,
                cookies=self._cookies,  # one shared jar: each cookie still goes only to its domain
                verify=self._tls,
                trust_env=True,  # HTTP_PROXY / HTTPS_PROXY / NO_PROXY
                limits=self._limits,
            )
            _use_backend(self._clients[host], self._backend)
        return self._clients[host]

    async def get(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        budget: Budget | None = None,
        reach: Reach | None = None,
        same_reach: bool = False,
    ) -> Exchange:
        """GET `url`, following up to max_redirects redirects by hand.

        Never raises for anything a URL, a server or a redirect can do: every
        failure is an Exchange with a reason. With `reach`, every hop must be
        on an address no more private than that (resources of a page); with
        `same_reach`, every redirect no more private than `url` itself (a page's:
        a public page that redirects to this machine or the intranet is refused).
        """
        self._sweep_soon()
        chain = [url]
        current = url
        started: float | None = None
        own = 0.0  # the hops' own time, our politeness waits between them left out
        for hops in range(self.max_redirects + 1):
            if same_reach and hops == 1 and reach is None:
                where = await self.reach_of(url)
                reach = where if isinstance(where, Reach) else Reach.PUBLIC
            hop = await self._hop(current, headers or {}, original=url, budget=budget, reach=reach)
            started = started or hop.started_at  # time spent queueing for a host is not counted
            hop.url, hop.redirects = url, chain[1:]
            own += hop.elapsed
            hop.server_seconds = own
            hop.elapsed += hop.started_at - started
            hop.started_at = started
            if hop.error or hop.redirect_to is None:
                return hop
            try:
                nxt = urljoin(current, hop.redirect_to.strip())
            except ValueError as exc:
                return _failed(url, current, Reason.BAD_URL, f"redirected to a malformed URL {hop.redirect_to[:200]!r}: {exc}", chain[1:], started)
            if urlsplit(nxt).scheme not in ("http", "https"):
                return _failed(url, nxt[:2000], Reason.REDIRECT_SCHEME, f"redirected to a non-web URL: {nxt[:200]}", chain[1:], started)
            if nxt in chain:
                return _failed(url, nxt, Reason.REDIRECT_LOOP, f"redirect loop: {' -> '.join(chain + [nxt])}", chain[1:], started)
            chain.append(nxt)
            current = nxt
        return _failed(url, current, Reason.TOO_MANY_REDIRECTS, f"more than {self.max_redirects} redirects", chain[1:], started)

    async def get_json(self, url: str) -> Any:
        """A small JSON API answer (the Wayback availability API), politely, not captured."""
        async with self._gate(url).turn(self._global):
            async with asyncio.timeout(self.timeout):
                response = await self._http(url).get(url)
        response.raise_for_status()
        return response.json()

    def _proxied(self, url: str) -> bool:
        """Whether httpx sends `url` through a proxy of the environment, as httpx itself decides
        (`NO_PROXY` entries with a port or a scheme, one proxy for http and none for https: the
        standard library's answer differs), asked once per scheme and server in a run."""
        parts = urlsplit(url)
        key = (parts.scheme, (parts.netloc or "").lower())
        answer = self._proxy_answers.get(key)
        if answer is None:
            http = self._http(url)
            try:
                answer = http._transport_for_url(httpx.URL(url)) is not http._transport
            except Exception:  # noqa: BLE001 - a URL httpx refuses, or internals not the ones known here
                answer = proxied(url)
            self._proxy_answers[key] = answer
        return answer

    def _gate(self, url: str) -> HostGate:
        """The gate of the server `url` names: one per host name and port, however the URL
        writes them (`Example.com`, `example.com:80`, `user@example.com` are one server, and
        its pages and their images wait at the same gate)."""
        key = _server(url)
        if key not in self._gates:
            self._gates[key] = HostGate(self.per_host, self.delay)
        return self._gates[key]

    async def reach_of(self, url: str, timeout: float | None = None, *, page: bool = False, resource: bool = False) -> Reach | Exchange:
        """Where `url`'s host is (the most private of its addresses), or the failed lookup.

        Requests that wait for the same name share one lookup, whichever way the URL spells
        it (`bücher.test` and `xn--bcher-kva.test` are one name, looked up once: its addresses
        are the ones every connection to it uses). `timeout` bounds the wait: a resource's
        (a slow resolver with a hundred image hosts queued must not hold up a run), a page's
        (`page`: its lookup is part of its --timeout, and may be retried). A `resource`'s failed
        lookup takes its host down for the run, and it takes a lookup ahead's recent failure."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        if (parts.netloc or "").lower() in self.down:  # its name was found not to exist meanwhile
            return self._refused(url, (parts.netloc or "").lower())
        known = self._reach.get(host)
        if known is not None:  # an address, or a name as looked up
            return known
        try:
            known = self._reach[host] = reach_of_ip(host)
            return known
        except ValueError:  # a name
            pass
        if self._proxied(url):  # the proxy resolves it; only names of this machine are known here (not kept:
            # the same name by another scheme or port may go direct)
            return Reach.LOOPBACK if host == "localhost" or host.endswith(".localhost") else Reach.PUBLIC
        try:
            name = ascii_host(host)
        except UnicodeError as exc:
            return self._dns_failure(url, exc)
        if name in self._reach:
            return self._reach[name]
        if name in self._ahead:  # looked up ahead: a request waits for it now, or it failed while none did
            failed = self._ahead.pop(name)
            if failed is not None and resource and time.monotonic() - failed[1] < AHEAD_FAILURE_SECONDS:
                return self._dns_failure(url, failed[0], budget=True)  # its failure is this resource's
            # (a page, or an address check, asks again)
        lookup = self._lookups.get(name)
        if lookup is None and self._deferring:
            return self._deferred(url)
        if lookup is None:
            lookup = self._lookups[name] = asyncio.ensure_future(self._lookup(name))
            lookup.add_done_callback(functools.partial(self._looked_up, name))
        try:
            async with asyncio.timeout(timeout):
                self._reach[name] = await asyncio.shield(lookup)
        except asyncio.CancelledError:
            if not lookup.cancelled() or asyncio.current_task().cancelling():
                raise  # this request is stopped, not the lookup
            return self._deferred(url)
        except TimeoutError:
            late = socket.gaierror(socket.EAI_AGAIN, f"no answer from the resolver within {timeout:g} s")
            return self._dns_failure(url, late, budget=resource)
        except (OSError, UnicodeError, ValueError) as exc:  # not kept: a page's lookup that timed out may work
            return self._dns_failure(url, exc, budget=resource)  # later (a resource's takes its host down)
        return self._reach[name]

    def _looked_up(self, host: str, lookup: asyncio.Future) -> None:
        self._lookups.pop(host, None)
        if lookup.cancelled():
            self._ahead.pop(host, None)
            return
        failed = lookup.exception()  # retrieved: a lookup everyone stopped waiting for is not an error to log
        if failed is None:
            self._reach.setdefault(host, lookup.result())  # for the requests to come (one waiting sets it too)
            return
        self._failed_names.add(host)  # not looked up ahead again in this run (a request may ask itself)
        if host in self._ahead:
            self._ahead[host] = (failed, time.monotonic())

    def look_up_ahead(self, html_head: bytes, base: str) -> None:
        """Start looking up the host names `html_head` (the start of a page's HTML, decoded) loads
        resources from, while the page is extracted: when its images' requests come, their
        lookups are done or under way. At most LOOK_AHEAD names a page; the requests apply the
        address rules, this only asks early."""
        if not self._look_ahead or self._deferring:
            return
        own = (urlsplit(base).hostname or "").lower()
        names: list[str] = []
        for match in _SLASHES_HOST.finditer(html_head):
            start = match.start()
            attribute = _RESOURCE_ATTRIBUTE.search(html_head[max(0, start - 30):start])
            if attribute is None:
                continue
            if attribute[1]:  # href: only a stylesheet's or a preload's <link> (not canonical, alternate, ...)
                tag = html_head.rfind(b"<", 0, start)
                end = html_head.find(b">", start)
                element = html_head[tag + 1:end if end >= 0 else len(html_head)].lower()
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
        for name in names:
            try:
                reach_of_ip(name)
                continue  # an address: nothing to look up
            except ValueError:
                pass
            if (name in self._reach or name in self._lookups or name in self._ahead or name in self._failed_names
                    or self._dead.get(name, 0) > time.time()):
                continue
            self._ahead[name] = None
            lookup = self._lookups[name] = asyncio.ensure_future(self._lookup(name))
            lookup.add_done_callback(functools.partial(self._looked_up, name))

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
        self._addresses[name] = addresses
        return max(reach_of_ip(address) for address in addresses)

    def defer_lookups(self, deferring: bool = True) -> None:
        """The run's pages are all recorded and their resources had their grace: the lookups
        still under way, and any asked for from now, give up; their requests end `deferred`
        (not failed: the next run asks again). A slow or lossy resolver never holds the run's end."""
        self._deferring = deferring
        for lookup in list(self._lookups.values()) if deferring else ():
            lookup.cancel()

    def _deferred(self, url: str) -> Exchange:
        self.deferred += 1
        return _failed(url, url, Reason.DEFERRED, "the host name had no answer yet when the run ended; the next run asks again", give_up=True)

    async def _hop(self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None) -> Exchange:
        try:
            return await self._hop_unguarded(url, headers, original, budget, reach)
        except (httpx.InvalidURL, UnicodeError, ValueError, IndexError) as exc:  # idna and httpx refuse the URL
            return _failed(url, url, Reason.BAD_URL, f"malformed URL: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one URL must never end the run
            return _failed(url, url, Reason.INTERNAL, f"internal error: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)

    async def _hop_unguarded(self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None) -> Exchange:
        host = (urlsplit(url).netloc or "").lower()
        if host in self.down or (self.offline and not _is_ip(url)):
            return self._refused(url, host)
        checked = _parsed(url)  # refuses a malformed URL (bad_url) before any lookup
        parsed = checked if reach is not None else None  # (resources may take the direct path)
        if reach is not None or not self._proxied(url):  # where the host is first (a proxy looks names up itself)
            where = await self.reach_of(url, budget.timeout if budget else self.timeout, page=budget is None, resource=budget is not None)
            if isinstance(where, Exchange):
                return where
            if reach is not None and where > reach:
                return _failed(url, url, Reason.PRIVATE_ADDRESS, f"{urlsplit(url).hostname} is a {where.name.lower()} address; "
                               "a page's redirects and resources go only to addresses no more private than the page's own "
                               "(--allow-private to allow)", give_up=True)
        http = self._http(url)  # set up before the gate's clock starts, so the gap is the server's
        pool = self._direct_pool(http, host, parsed, headers) if parsed is not None else None
        if pool is None:
            request = http.build_request("GET", url, headers=headers)  # refuses a malformed URL before any waiting
            request_headers = list(request.headers.items())
        else:
            assert parsed is not None
            raw_headers, request_headers = self._direct_headers(http, host, parsed)
        timeout = budget.timeout if budget else self.timeout
        async with self._gate(url).turn(budget.semaphore if budget else self._global) as turn:
            if host in self.down or (self.offline and not _is_ip(url)):  # went down while we queued
                return self._refused(url, host)
            hop = Exchange(url=url, final_url=url, started_at=time.time())
            if budget is None:
                self.in_flight[url] = time.monotonic()
            try:
                async with asyncio.timeout(timeout):
                    if pool is None:
                        if turn.holding:  # the gate waits for the request line to go out
                            request.extensions["trace"] = turn.trace
                        response = await http.send(request, stream=True)
                    else:
                        extensions = {"timeout": self._timeouts, "trace": turn.trace} if turn.holding else {"timeout": self._timeouts}
                        response = await _direct.send(pool, parsed, raw_headers, extensions)
                        if "set-cookie" in response.headers:  # kept as httpx keeps it, before the body: later requests send it
                            http.cookies.extract_cookies(httpx.Response(response.status_code, headers=response.headers.raw, request=httpx.Request("GET", parsed)))
                    try:
                        body, head, truncated = await self._read_body(response)
                    finally:
                        await response.aclose()
            except TimeoutError:
                failed = _failed(url, url, Reason.TIMEOUT, f"no complete response within {timeout:g} s", started=hop.started_at)
                if budget is not None and host not in self._answered:  # a hanging image host costs one timeout
                    self._take_down(url, failed)
                return failed
            except httpx.HTTPError as exc:
                return self._transport_failure(url, exc, hop.started_at)
            except (ssl.SSLError, OSError) as exc:
                return _failed(url, url, Reason.CONNECT, str(exc) or type(exc).__name__, started=hop.started_at)
            finally:
                self.in_flight.pop(url, None)
        self.reached = True
        self._answered.add(host)
        hop.elapsed = time.time() - hop.started_at
        hop.status = response.status_code
        hop.content_type = response.headers.get("content-type")
        hop.etag = response.headers.get("etag")
        hop.last_modified = response.headers.get("last-modified")
        extra = {"WARC-Truncated": "length"} if truncated else {}
        hop.location = self.writer.write(
            Capture(
                url=url,
                method="GET",
                request_headers=request_headers,
                status=response.status_code,
                reason=_raw_reason(response),
                http_version=response.http_version,
                response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
                body=body,
                extra_warc_headers={**extra, PAGE_HEADER: original},
                target=(request.url if pool is None else parsed).raw_path.decode("ascii"),
            )
        )
        body.close()
        if truncated:
            hop.error, hop.message = Reason.TOO_LARGE, f"body larger than {self.max_bytes:,} bytes (decoded); refused"
            return hop
        if 300 <= response.status_code < 400 and response.status_code != 304 and "location" in response.headers:
            hop.redirect_to = response.headers["location"]
            return hop
        reason = None
        if is_htmlish(hop.content_type) or response.status_code >= 400:  # an image is never a challenge page
            reason = blocked_reason(response.status_code, url, original, _decode_head(head, response))
        if reason:
            hop.error, hop.message = Reason.BLOCKED, f"{reason}; {HINT}"
        elif budget is None and response.status_code == 200 and is_htmlish(hop.content_type):
            self.look_up_ahead(head, url)  # its images' names, while it is extracted
        elif response.status_code >= 400:
            hop.error = http_error(response.status_code)
            hop.message = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            hop.retry_after = _retry_after(response.headers.get("retry-after"))
        return hop

    def _direct_pool(self, http: httpx.AsyncClient, host: str, parsed: httpx.URL, headers: dict[str, str]) -> httpcore.AsyncConnectionPool | None:
        """The pool a resource request may go to without httpx's models (see `mirror._direct`):
        none when cookies, a proxy, credentials in the URL, extra headers or a Host header of
        the user's (--header) are involved."""
        if (headers or self._cookies is not None or parsed.userinfo or parsed.scheme not in ("http", "https")
                or len(http.cookies.jar) or "host" in http.headers):
            return None
        return self._pools.get(parsed, host) if _direct.unproxied(http, parsed) else None

    def _direct_headers(self, http: httpx.AsyncClient, host: str, parsed: httpx.URL) -> tuple[list[tuple[bytes, bytes]], list[tuple[str, str]]]:
        """The headers `http` would send to `parsed`'s host, raw and as written to WARC; the same for every resource of a host."""
        key = (host, parsed.netloc)
        if key not in self._resource_headers:
            raw = [(b"Host", parsed.netloc), *http.headers.raw]
            self._resource_headers[key] = (raw, list(httpx.Headers(raw).items()))
        return self._resource_headers[key]

    def _refused(self, url: str, host: str) -> Exchange:
        """A request to a host that is down for this run: failed at once, same reason, no waiting."""
        if host in self.down:
            cause = self.down[host]
            return _failed(url, url, cause.error or Reason.CONNECT, cause.message or "", give_up=True)
        return _failed(url, url, Reason.DNS, OFFLINE_HINT, give_up=True)

    def _transport_failure(self, url: str, exc: httpx.HTTPError, started: float) -> Exchange:
        category, message = _classify_error(exc)
        if category == Reason.DNS:
            return self._dns_failure(url, exc, started)
        failed = _failed(url, url, category, message, started=started)
        refused = category == Reason.CONNECT and _errno(exc) == errno.ECONNREFUSED
        if refused:
            self._take_down(url, failed)
        if refused or category in (Reason.RESET, Reason.PROTOCOL, Reason.TLS):
            self.reached = True  # something answered at that address: the network works
        return failed

    def _dns_failure(self, url: str, exc: BaseException, started: float | None = None, *, budget: bool = False) -> Exchange:
        """NXDOMAIN takes the host down for the run; a lookup that timed out may be retried,
        unless nothing has been reached yet and several names failed: then the network is down.
        A resource's lookup that took longer than its budget takes its host down too, as a
        hanging resource host does."""
        message = str(exc)[:300] if isinstance(exc, httpx.HTTPError) else f"host name not found: {str(exc)[:300]}"
        failed = _failed(url, url, Reason.DNS, message if message.startswith("host name") else f"host name not found: {message}", started=started)
        code = _errno(exc)
        if code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)) or isinstance(exc, UnicodeError):
            self._take_down(url, failed)
        elif budget and (urlsplit(url).netloc or "").lower() not in self._answered:
            self._take_down(url, failed)
        else:
            self._unresolved.add(urlsplit(url).hostname or "")
            if not self.reached and len(self._unresolved) >= OFFLINE_AFTER:
                self.offline = True
                for host, gate in self._gates.items():
                    if not _is_ip(f"http://{host}/"):
                        gate.close()
            failed.give_up = self.offline
        return failed

    def _take_down(self, url: str, failed: Exchange) -> None:
        failed.give_up = True
        self.down.setdefault((urlsplit(url).netloc or "").lower(), failed)
        self._gate(url).close()

    async def _read_body(self, response: httpx.Response | _direct.DirectAnswer) -> tuple[tempfile.SpooledTemporaryFile, bytes, bool]:
        body = tempfile.SpooledTemporaryFile(max_size=1 << 20)
        declared = response.headers.get("content-length", "")
        encoding = payload_coding(response.headers.raw)  # what reading the capture back will decode
        if declared.isdigit() and int(declared) > self.max_bytes and not encoding:
            return body, b"", True
        decoder = _SizeCounter(encoding, self.max_bytes)
        async for chunk in response.aiter_raw():
            body.write(chunk)
            if decoder.feed(chunk):
                return body, bytes(decoder.head), True
        return body, bytes(decoder.head), False


def _raw_reason(response: httpx.Response | _direct.DirectAnswer) -> str:
    """The status text as sent (httpx keeps only its ASCII characters), as Latin-1 like the
    headers: the WARC record writes it back as the same bytes (`warc._head_bytes`)."""
    raw = response.extensions.get("reason_phrase") if isinstance(response, httpx.Response) else response.raw_reason
    return raw.decode("latin-1") if isinstance(raw, bytes) else response.reason_phrase


@functools.lru_cache(maxsize=4096)
def _server(url: str) -> str:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"


def ascii_host(host: str) -> str:
    """A host name as it goes to the resolver and to `connect`: IDNA's ASCII form, lower case."""
    if host.isascii():
        return host.lower()
    return httpx.URL(f"http://{host}/").raw_host.decode("ascii").lower()


def _use_backend(client: httpx.AsyncClient, backend: httpcore.AsyncNetworkBackend) -> None:
    """Connections of `client`'s own transport through `backend` (which connects to the
    addresses our lookup checked). A proxy's transport is left as it is: the proxy looks names up."""
    pool = _pool_of(client)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = backend


def _pool_of(client: httpx.AsyncClient) -> object | None:
    """The httpcore pool behind an httpx client (None if httpx's internals changed)."""
    return getattr(getattr(client, "_transport", None), "_pool", None)


def _errno(exc: BaseException) -> int | None:
    """The OS error code behind an httpx error (httpx wraps OSError / gaierror)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno is not None:
            return exc.errno
        exc = exc.__cause__ or exc.__context__
    return None


def _is_ip(url: str) -> bool:
    try:
        reach_of_ip(urlsplit(url).hostname or "")
        return True
    except ValueError:
        return False


def _proxies_set() -> bool:
    """Whether the environment names a proxy for some scheme (NO_PROXY alone names none)."""
    return any(scheme != "no" and value for scheme, value in urllib.request.getproxies().items())


def proxied(url: str) -> bool:
    """Whether a request for `url` goes through a proxy of the environment (HTTP_PROXY, ...)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    return bool(proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(parts.hostname or "")


# Deflate expands at most 1032:1 (a 258-byte match in two bits), so a body whose raw size
# is at most limit / 1032 cannot decode past the limit.
MAX_DEFLATE_RATIO = 1032


class _SizeCounter:
    """Decodes gzip/deflate in bounded pieces to count the decoded size, with the coding the
    capture will be read back with (`warc.payload_coding`: two `Content-Encoding: gzip`
    fields are decoded once, as warcio does, not left uncounted as an unknown `gzip, gzip`).

    Past the head kept for recognising blocked pages, a body too small to decode past the
    limit is not decoded here at all (the extraction worker decodes it anyway): its raw
    bytes wait, at most limit / MAX_DEFLATE_RATIO of them, and are decoded only if it grows."""

    def __init__(self, encoding: str, limit: int):
        self.limit = limit
        self.total = 0
        self.head = bytearray()
        self._raw = 0
        self._waiting: list[bytes] = []
        self._zlib = None
        if encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj()
        elif encoding == "deflate_alt":
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        elif encoding:  # one warcio would decode (brotli, when installed) and this cannot count: refused
            self.total = limit + 1
        self._encoding = encoding

    def feed(self, chunk: bytes) -> bool:
        """Count one raw chunk; True once the decoded size passes the limit."""
        if self.total > self.limit:
            return True
        if self._zlib is None:
            return self._count(chunk)
        self._raw += len(chunk)
        if len(self.head) >= HEAD_BYTES and self._raw * MAX_DEFLATE_RATIO <= self.limit:
            self._waiting.append(chunk)
            return False
        data = b"".join([*self._waiting, chunk])
        self._waiting.clear()
        while data:
            try:
                piece = self._zlib.decompress(data, 256 * 1024)
            except zlib.error:
                if self._encoding == "deflate" and self.total == 0:  # raw deflate without zlib header
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                return self._count(data)  # undecodable: count what we have
            if self._count(piece):
                return True
            data = self._zlib.unconsumed_tail
            if not piece and not data:
                break
        return False

    def _count(self, piece: bytes) -> bool:
        self.total += len(piece)
        if len(self.head) < HEAD_BYTES:
            self.head.extend(piece[: HEAD_BYTES - len(self.head)])
        return self.total > self.limit


def _failed(
    url: str, final: str, category: str, message: str, redirects: list[str] | None = None, started: float | None = None, *, give_up: bool = False
) -> Exchange:
    now = time.time()
    return Exchange(
        url=url,
        final_url=final,
        error=category,
        message=message,
        redirects=redirects or [],
        started_at=started or now,
        elapsed=now - (started or now),
        give_up=give_up,
    )


def _classify_error(exc: httpx.HTTPError) -> tuple[Reason, str]:
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if _errno(exc) in (errno.EMFILE, errno.ENFILE):  # anyio says "All connection attempts failed"
        return Reason.CONNECT, f"cannot connect: too many open files: mirror ran out of file descriptors (ulimit -n): {text}"
    if isinstance(exc, httpx.TimeoutException):
        return Reason.TIMEOUT, f"timed out: {text}"
    if isinstance(exc, httpx.ConnectError):
        if any(s in lowered for s in ("name or service", "nodename nor servname", "getaddrinfo", "temporary failure in name", "no address associated")):
            return Reason.DNS, f"host name not found: {text}"
        if "ssl" in lowered or "certificate" in lowered:
            return Reason.TLS, f"TLS failure: {text}"
        return Reason.CONNECT, f"cannot connect: {text}"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return Reason.RESET, f"connection broken: {text}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return Reason.PROTOCOL, f"bad response: {text}"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return Reason.SCHEME, text
    if isinstance(exc, httpx.ProxyError):
        return Reason.PROXY, f"proxy failure: {text}"
    return Reason.HTTP_ERROR, text


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base: float, retry_after: float | None, cap: float) -> float:
    """Exponential backoff with jitter; a server's Retry-After wins (capped)."""
    if retry_after is not None:
        return min(retry_after, cap)
    return min(base * (2**attempt) + random.uniform(0, base / 2), cap)


def is_htmlish(content_type: str | None) -> bool:
    return content_type is None or any(t in content_type.lower() for t in ("html", "xml", "text/plain"))


def _decode_head(head: bytes, response: httpx.Response | _direct.DirectAnswer) -> str:
    text = decode(head, _charset(response.headers.get("content-type")), errors="replace")
    return head.decode("utf-8", errors="replace") if text is None else text


def _charset(content_type: str | None) -> str | None:
    """The charset a Content-Type names (parsed as `httpx.Response.charset_encoding` does)."""
    if content_type is None:
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    return message.get_content_charset(failobj=None)


def _parsed(url: str) -> httpx.URL:
    """`url` as httpx parses it; raises for what `httpx.Request` would refuse (an undecodable
    A-label such as `http://xn--/` parses, but its host does not decode)."""
    parsed = httpx.URL(url)
    parsed.host  # noqa: B018 - decodes the IDNA host
    return parsed
