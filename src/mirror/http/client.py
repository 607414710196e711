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

import httpcore
import httpx

from .._types import Exchange, Reason, WarcLocation
from ..warc import CaptureWriter
from . import direct as _direct
from . import transport as _net
from .failures import failed
from .gate import Budget, Reach, server_key
from .health import HostHealth
from .hop import Hops
from .lookups import Lookups, ascii_host
from .resolver import Resolver, nameservers_from_env

__all__ = ["Client", "proxied"]

KEEPALIVE = 5.0  # seconds an idle connection is kept for the next request to its host (httpx's default)
SWEEP_EVERY = 5.0  # seconds between closing the connections that outlived their keep-alive


class _HttpClient(httpx.AsyncClient):
    """httpx builds `response.next_request` even when not following redirects, and
    raises on a Location it cannot parse (`data:`, `http://xn--/`), losing the
    response. We follow redirects ourselves, so a bad Location is just no next request."""

    def _build_redirect_request(self, request: httpx.Request, response: httpx.Response) -> httpx.Request | None:
        try:
            return super()._build_redirect_request(request, response)
        except (httpx.InvalidURL, httpx.RemoteProtocolError, UnicodeError, ValueError, IndexError):
            return None


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
        self.lookups = Lookups(resolver or Resolver(nameservers_from_env()), dead_names,
                               look_ahead and not _proxies_set())  # (a proxy looks names up itself)
        self._global = asyncio.Semaphore(concurrency)
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._headers, self._cookies = headers, cookies
        self._private_headers, self._private_hosts = private_headers or {}, private_hosts
        self._tls = httpx.create_ssl_context()  # built once: it costs tens of milliseconds
        self._limits = httpx.Limits(max_connections=per_host, max_keepalive_connections=per_host, keepalive_expiry=keepalive)
        self._timeout = httpx.Timeout(timeout)
        self._timeouts = self._timeout.as_dict()  # the same per-phase limits, as httpcore takes them (direct pools)
        self._backend = _net.Backend(self.lookups.addresses.get)  # connects to the addresses looked up, for every pool of ours
        self._pools = _direct.Pools(self._tls, self._limits, self._backend)  # for page resources (see mirror.http.direct)
        self._proxy_answers: dict[tuple[str, str | None], bool] = {}
        self._resource_headers: dict[tuple[str, bytes], tuple[list[tuple[bytes, bytes]], list[tuple[str, str]]]] = {}
        self.revisits = revisits or {}
        self.deferred = 0  # requests given up at the run's end (asked for by the next run)
        self.in_flight: dict[str, float] = {}  # page requests under way (past their host's gate) -> time.monotonic() at start
        self._sweeper: asyncio.Task | None = None

    # what the run reads of the client's health and lookups
    down = property(lambda self: self.health.down, doc="host -> the failure that took it down for this run")
    reached = property(lambda self: self.health.reached, doc="some server answered: the network works")
    offline = property(lambda self: self.health.offline, doc="nothing reached and several names failed")
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
        for pool in [*self._pools.pools(), *(_pool_of(client) for client in self._clients.values())]:
            for connection in list(getattr(pool, "connections", ())):
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
            for client in self._clients.values():
                await client.aclose()
        finally:
            try:
                await self._pools.aclose()
            finally:
                self.lookups.close()

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
            if not lookup.cancelled() or asyncio.current_task().cancelling():
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
        self.deferred += 1
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


def _use_backend(client: httpx.AsyncClient, backend: httpcore.AsyncNetworkBackend) -> None:
    """Connections of `client`'s own transport through `backend` (which connects to the
    addresses our lookup checked). A proxy's transport is left as it is: the proxy looks names up."""
    pool = _pool_of(client)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = backend


def _pool_of(client: httpx.AsyncClient) -> object | None:
    """The httpcore pool behind an httpx client (None if httpx's internals changed)."""
    return getattr(getattr(client, "_transport", None), "_pool", None)


def _proxies_set() -> bool:
    """Whether the environment names a proxy for some scheme (NO_PROXY alone names none)."""
    return any(scheme != "no" and value for scheme, value in urllib.request.getproxies().items())


def proxied(url: str) -> bool:
    """Whether a request for `url` goes through a proxy of the environment (HTTP_PROXY, ...)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    return bool(proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(parts.hostname or "")
