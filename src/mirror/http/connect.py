"""Where a request goes: through the proxy the environment names (HTTP_PROXY, HTTPS_PROXY,
ALL_PROXY, NO_PROXY, read by httpx's documented rules: `proxy_for`), else straight to the
addresses mirror's own lookup gave and checked (`CheckedTransport`), never to a second lookup's,
which could differ (DNS rebinding). Public httpx and httpcore API only: an httpcore pool whose
network backend connects to those addresses through httpcore's own anyio backend, wrapped as an
httpx transport, as httpx documents custom transports."""

from __future__ import annotations

import ipaddress
import ssl
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple
from urllib.parse import urlsplit

import httpcore
import httpx

__all__ = ["CheckedTransport", "Route", "proxied", "proxy_for"]

# httpcore's errors as httpx raises them (most specific first), so one classification serves every request
_ERRORS: list[tuple[type[Exception], type[httpx.HTTPError]]] = [
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
]


def proxy_for(url: str) -> str | None:
    """The proxy a request for `url` goes through, or None: HTTP_PROXY or HTTPS_PROXY by its
    scheme, else ALL_PROXY, unless NO_PROXY names it (`*`; a name, which takes its subdomains;
    `.name`, its subdomains only; an address; a URL; a port after any of them), as httpx reads
    the environment (`trust_env`): each entry a pattern, matched as httpx matches its mounts."""
    proxies = urllib.request.getproxies()
    scheme = urlsplit(url).scheme.lower()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return None
    patterns = _no_proxy_patterns(proxies.get("no", ""))
    if patterns is None or (patterns and any(_matches(pattern, httpx.URL(url)) for pattern in patterns)):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def proxied(url: str) -> bool:
    """Whether a request for `url` goes through a proxy of the environment."""
    return proxy_for(url) is not None


def _no_proxy_patterns(value: str) -> list[httpx.URL] | None:
    """NO_PROXY's entries as httpx's URL patterns (None: `*`, no proxy at all)."""
    patterns = []
    for entry in (entry.strip() for entry in value.split(",")):
        if entry == "*":
            return None
        address = entry.split("/")[0]
        if "://" in entry:
            pattern = entry
        elif _is_address(address):
            pattern = f"all://[{entry}]" if ":" in address else f"all://{entry}"
        elif entry.lower() == "localhost":
            pattern = f"all://{entry}"
        else:
            pattern = f"all://*{entry}"
        try:
            patterns.append(httpx.URL(pattern)) if entry else None
        except (httpx.InvalidURL, ValueError, UnicodeError):
            continue
    return patterns


def _matches(pattern: httpx.URL, url: httpx.URL) -> bool:
    """As httpx's routing matches a URL pattern: its scheme (`all`: any), its host (`*.name`:
    subdomains, `*name`: the name and its subdomains), its port."""
    if pattern.scheme != "all" and pattern.scheme != url.scheme:
        return False
    host = pattern.host
    if host and host != "*":
        if host.startswith("*."):
            found = url.host.endswith(host[1:]) and len(url.host) > len(host) - 1
        elif host.startswith("*"):
            found = url.host == host[1:] or url.host.endswith("." + host[1:])
        else:
            found = url.host == host
        if not found:
            return False
    return pattern.port is None or pattern.port == url.port


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Route(NamedTuple):
    """How requests to one host go: `http` builds them (the host's headers, the cookies, the
    timeouts), `transport` sends them (to the checked addresses, or through the proxy), one
    exchange at a time: redirects are followed by the Client, hop by hop. `pool`: a direct
    route's connections, swept of those past their keep-alive."""

    http: httpx.AsyncClient
    transport: httpx.AsyncBaseTransport
    pool: httpcore.AsyncConnectionPool | None


class CheckedAddresses(httpcore.AsyncNetworkBackend):
    """`resolved(host)` gives the addresses a host name was looked up (and checked) to: the
    connection goes to those, in turn, through httpcore's anyio backend. A host not looked up (an
    address written in the URL) is connected to as it is."""

    def __init__(self, resolved: Callable[[str], list[str] | None]) -> None:
        self._resolved = resolved
        self._anyio = httpcore.AnyIOBackend()

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options=None
    ) -> httpcore.AsyncNetworkStream:
        failed: httpcore.ConnectError | None = None
        for address in self._resolved(host.lower()) or [host]:
            try:
                return await self._anyio.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # (a timeout is the request's: it is not tried elsewhere)
                failed = exc
        raise failed or httpcore.ConnectError(f"no address for {host}")  # (there is always one: the host itself)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None) -> httpcore.AsyncNetworkStream:
        return await self._anyio.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._anyio.sleep(seconds)


class CheckedTransport(httpx.AsyncBaseTransport):
    """httpx's requests on an httpcore pool of HTTP/1.1 connections to the checked addresses
    (`CheckedAddresses`), with the TLS context and limits given; `pool` is swept by the client."""

    def __init__(self, resolved: Callable[[str], list[str] | None], tls: ssl.SSLContext, limits: httpx.Limits) -> None:
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=tls,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=CheckedAddresses(resolved),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        sent = httpcore.Request(
            request.method,
            httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self.pool.handle_async_request(sent)
        return httpx.Response(response.status, headers=response.headers, stream=_Body(response), extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self.pool.aclose()


class _Body(httpx.AsyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._response.aclose()


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise
