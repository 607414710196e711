"""The polite HTTP client: per-host gates, whole-request deadlines, bounded bodies.

One `Exchange` is a GET with its redirects followed by hand, so that every hop
is captured to WARC and the chain is kept. Bodies are read raw and decoded
incrementally only to count their size, so a gzip bomb is refused with
bounded memory. The parts: `gate` (where an address is, per-host gates), `lookups`
(host names), `health` (hosts down, the network down), `hop` (one request), `body`,
`failures` (reasons and retries).
"""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from .._types import Exchange, Reason, WarcLocation
from ..warc import CaptureWriter
from .connect import CheckedTransport, Route, proxied, proxy_for
from .failures import failed
from .gate import Budget, Reach, server_key
from .hop import Hops
from .host_health import HostHealth
from .lookups import Lookups, ascii_host
from .resolver import Resolver, nameservers_from_env, system_only

__all__ = ["Client", "proxied"]

KEEPALIVE = 5.0  # seconds an idle connection is kept for the next request to its host (httpx's default)
SWEEP_EVERY = 5.0  # seconds between closing the connections that outlived their keep-alive


class Client(Hops):
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
        revisits: dict[str, tuple[str, WarcLocation]] | None = None,
    ):
        """`private_headers` (the user's --header values) go only to `private_hosts`
        (None: to every host). An idle connection is kept `keepalive` seconds. Names are looked
        up by `resolver` (default: c-ares with MIRROR_NAMESERVERS, else the system's), and a
        connection goes to the addresses looked up and checked, never to a second lookup's.
        `dead_names` (name -> until when, a time.time()) did not exist in an earlier run: they are
        not asked again; `nxdomain` collects this run's, for the next. With `look_ahead`, the
        host names a page's HTML loads resources from are looked up as soon as it arrives.
        `revisits` (a page's URL -> its saved copy's URL and response record) makes a re-check that
        gets the same bytes at the same address again a WARC revisit record."""
        self.writer = writer
        self.timeout, self.max_bytes, self.max_redirects = timeout, max_bytes, max_redirects
        self.health = HostHealth(per_host, delay)
        self.lookups = Lookups(
            resolver or Resolver(nameservers_from_env()),
            dead_names,
            look_ahead and not _proxies_set(),  # (a proxy looks names up itself)
            on_resolved=lambda name: None if system_only(name) else self.health.name_resolved(),  # (this machine's names resolve offline too)
        )
        self._global = asyncio.Semaphore(concurrency)
        self._routes: dict[tuple[str, str | None], Route] = {}
        self._headers, self._cookies = headers, cookies
        self._private_headers, self._private_hosts = private_headers or {}, private_hosts
        # what is written to the WARC files without its value (`redact`): the user's headers, cookies and any credentials
        self.secret_headers = frozenset(name.lower() for name in self._private_headers)
        self.secret_cookies = frozenset(cookie.name for cookie in cookies) if cookies else frozenset()
        self._tls = httpx.create_ssl_context()  # built once: it costs tens of milliseconds
        self._limits = httpx.Limits(max_connections=per_host, max_keepalive_connections=per_host, keepalive_expiry=keepalive)
        self._timeout = httpx.Timeout(timeout)
        self._proxies: dict[tuple[str, str], str | None] = {}
        self.revisits = revisits or {}
        self.in_flight: dict[str, float] = {}  # page requests under way (past their host's gate) -> time.monotonic() at start
        self._sweeper: asyncio.Task | None = None

    # what the run reads of the client's health and lookups
    down = property(lambda self: self.health.down, doc="host -> the failure that took it down for this run")
    reached = property(lambda self: self.health.reached, doc="some server answered (this machine's own too)")
    network_works = property(lambda self: self.health.network_works, doc="a server off this machine answered, or a name resolved")
    offline = property(lambda self: self.health.offline, doc="several names had no answer, nothing showing the network working")
    nxdomain = property(lambda self: self.lookups.nxdomain, doc="names that did not exist in this run -> until when")

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
        for pool in [route.pool for route in self._routes.values() if route.pool is not None]:
            for connection in pool.connections:
                try:
                    if connection.has_expired():  # idle past its keep-alive: the pool would close it anyway
                        await connection.aclose()
                except Exception:  # noqa: BLE001 - a connection that broke while closing is closed
                    pass

    async def aclose(self) -> None:
        self.lookups.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        try:
            for route in self._routes.values():
                await route.http.aclose()  # (and its transport)
        finally:
            self.lookups.close()

    def _route(self, url: str) -> Route:
        """One route, and one connection pool, per host (httpcore checks every pooled connection
        on each request) and proxy: direct to the addresses looked up, or through the proxy."""
        parts = urlsplit(url)
        proxy = self._proxy_for(url)
        key = ((parts.netloc or "").lower(), proxy)
        if key not in self._routes:
            headers = self._headers
            if self._private_hosts is None or (parts.hostname or "") in self._private_hosts:
                headers = {**headers, **self._private_headers}
            transport: httpx.AsyncBaseTransport
            pool = None  # the connections the client sweeps (a proxy's are httpx's own)
            if proxy is None:
                checked = CheckedTransport(self.lookups.addresses.get, self._tls, self._limits)
                transport, pool = checked, checked.pool
            else:
                transport = httpx.AsyncHTTPTransport(proxy=proxy, verify=self._tls, limits=self._limits)
            http = httpx.AsyncClient(
                transport=transport,
                timeout=self._timeout,
                headers=headers,
                cookies=self._cookies,  # one shared jar: each cookie still goes only to its domain
                trust_env=False,  # (the proxy is decided here: `connect.proxy_for`)
            )
            self._routes[key] = Route(http, transport, pool)
        return self._routes[key]

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
        """GET `url`, following up to max_redirects redirects by hand.

        Never raises for anything a URL, a server or a redirect can do: every
        failure is an Exchange with a reason. With `reach`, every hop must be
        on an address no more private than that (resources of a page); with
        `same_reach`, every redirect no more private than `url` itself (a page's:
        a public page that redirects to this machine or the intranet is refused).
        `render_for` names the page a browser asked this for while rendering it: its
        records say so (`warc.RENDER_HEADER`), and crash recovery leaves them alone.
        """
        self._sweep_soon()
        chain = [url]
        current = url
        origin = server_key(url)
        started: float | None = None
        own = 0.0  # the hops' own time, our politeness waits between them left out
        for hops in range(self.max_redirects + 1):
            if same_reach and hops == 1 and reach is None:
                where = await self.reach_of(url)
                reach = where if isinstance(where, Reach) else Reach.PUBLIC
            # a redirect to another server goes without the credentials the request carried (a browser's
            # cookies for the first host); that server's own cookies come from the run's jar
            sent = (headers or {}) if server_key(current) == origin else _without_credentials(headers)
            hop = await self._hop(current, sent, original=url, budget=budget, reach=reach, render_for=render_for)
            started = started or hop.started_at  # time spent queueing for a host is not counted
            hop.url, hop.redirects = url, chain[1:]
            own += hop.elapsed
            hop.server_seconds = own
            hop.elapsed += hop.started_at - started
            hop.started_at = started
            if hop.error or hop.redirect_to is None:
                return hop
            nxt = _next_hop(url, current, hop.redirect_to, chain, started)
            if isinstance(nxt, Exchange):
                return nxt
            chain.append(nxt)
            current = nxt
        return failed(url, current, Reason.TOO_MANY_REDIRECTS, f"more than {self.max_redirects} redirects", chain[1:], started)

    async def get_json(self, url: str) -> Any:
        """A small JSON API answer (the Wayback availability API), politely, not captured."""
        async with self.health.gate(url).turn(self._global):
            async with asyncio.timeout(self.timeout):
                response = await self._route(url).http.get(url)
        response.raise_for_status()
        return response.json()

    def _proxy_for(self, url: str) -> str | None:
        """The proxy of the environment `url` goes through (`connect.proxy_for`), asked once per
        scheme and server in a run: the same answer decides the address rule and the route."""
        parts = urlsplit(url)
        key = (parts.scheme, (parts.netloc or "").lower())
        if key not in self._proxies:
            try:
                self._proxies[key] = proxy_for(url)
            except (httpx.InvalidURL, UnicodeError, ValueError):  # a URL httpx refuses: its request says so
                self._proxies[key] = None
        return self._proxies[key]

    def _proxied(self, url: str) -> bool:
        return self._proxy_for(url) is not None

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
        if (parts.netloc or "").lower() in self.health.down:  # its name was found not to exist meanwhile
            return self.health.refused(url, (parts.netloc or "").lower())
        known = self.lookups.known(host)  # an address, or a name as looked up
        if known is not None:
            return known
        if self._proxied(url):  # the proxy resolves it; only names of this machine are known here (not kept:
            # the same name by another scheme or port may go direct)
            return Reach.LOOPBACK if host == "localhost" or host.endswith(".localhost") else Reach.PUBLIC
        try:
            name = ascii_host(host)
        except UnicodeError as exc:
            return self.health.dns_failure(url, exc)
        if name in self.lookups.reach:
            return self.lookups.reach[name]
        failure = self.lookups.ahead_failure(name, resource)
        if failure is not None:
            return self.health.dns_failure(url, failure, budget=True)  # its failure is this resource's
        lookup = self.lookups.lookup(name)
        if lookup is None:
            return self._deferred(url)
        try:
            async with asyncio.timeout(timeout):
                self.lookups.reach[name] = await asyncio.shield(lookup)
        except asyncio.CancelledError:
            if not lookup.cancelled() or ((task := asyncio.current_task()) is not None and task.cancelling()):
                raise  # this request is stopped, not the lookup
            return self._deferred(url)
        except TimeoutError:
            late = socket.gaierror(socket.EAI_AGAIN, f"no answer from the resolver within {timeout:g} s")
            return self.health.dns_failure(url, late, budget=resource)
        except (OSError, UnicodeError, ValueError) as exc:  # not kept: a page's lookup that timed out may work
            return self.health.dns_failure(url, exc, budget=resource)  # later (a resource's takes its host down)
        return self.lookups.reach[name]

    def defer_lookups(self, deferring: bool = True) -> None:
        """The run's pages are all recorded and their resources had their grace: the lookups
        still under way, and any asked for from now, give up; their requests end `deferred`
        (not failed: the next run asks again). A slow or lossy resolver never holds the run's end."""
        self.lookups.defer(deferring)

    def _deferred(self, url: str) -> Exchange:
        return failed(url, url, Reason.DEFERRED, "the host name had no answer yet when the run ended; the next run asks again", give_up=True)


_CREDENTIALS = frozenset({"cookie", "authorization", "proxy-authorization"})


def _without_credentials(headers: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (headers or {}).items() if k.lower() not in _CREDENTIALS}


def _next_hop(url: str, current: str, location: str, chain: list[str], started: float) -> str | Exchange:
    """Where a redirect goes, or why it is not followed."""
    try:
        nxt = urljoin(current, location.strip())
    except ValueError as exc:
        return failed(url, current, Reason.BAD_URL, f"redirected to a malformed URL {location[:200]!r}: {exc}", chain[1:], started)
    if urlsplit(nxt).scheme not in ("http", "https"):
        return failed(url, nxt[:2000], Reason.REDIRECT_SCHEME, f"redirected to a non-web URL: {nxt[:200]}", chain[1:], started)
    if nxt in chain:
        return failed(url, nxt, Reason.REDIRECT_LOOP, f"redirect loop: {' -> '.join(chain + [nxt])}", chain[1:], started)
    return nxt


def _proxies_set() -> bool:
    """Whether the environment names a proxy for some scheme (NO_PROXY alone names none)."""
    return any(scheme != "no" and value for scheme, value in urllib.request.getproxies().items())
