"""Page resources through httpcore's pool directly, without httpx's request and response models.

A page shows three or four images; building an `httpx.Request` (three URL parses), a
`Response`, a cookie pass each way and the client's wrappers cost about as much CPU as the
exchange itself. A resource on a host whose client holds no cookies and reaches the server
without a proxy goes to an httpcore pool of its own (built as httpx builds its transport's)
with the headers that client would send, and what is written to WARC is the same. Anything
else (cookies, a proxy, a client whose internals are not the ones known here) takes the
httpx path.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpcore
import httpx

from . import transport as _net

__all__ = ["DirectAnswer", "Headers", "Pools", "send", "unproxied"]

# httpcore's errors as httpx raises them (most specific first), so one classification serves both paths
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
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
]


def unproxied(client: httpx.AsyncClient, url: httpx.URL) -> bool:
    """Whether `client` would send `url` on its own transport (no proxy the environment names);
    False too if this httpx's internals are not the ones known here."""
    try:
        return client._transport_for_url(url) is client._transport
    except Exception:  # noqa: BLE001 - internals changed: the httpx path
        return False


class Pools:
    """One httpcore pool per scheme and host (the host as its gate names it, so that one gate's
    requests never wait in another's pool), built as httpx builds its transport's (HTTP/1.1,
    the client's TLS context and limits), on asyncio's own transports (`transport`)."""

    def __init__(self, ssl_context: ssl.SSLContext, limits: httpx.Limits, backend: _net.Backend | None = None):
        self._ssl_context, self._limits = ssl_context, limits
        self._pools: dict[tuple[bytes, str], httpcore.AsyncConnectionPool] = {}
        self._backend = backend or _net.Backend()

    def get(self, url: httpx.URL, host: str) -> httpcore.AsyncConnectionPool:
        key = (url.raw_scheme, host)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = httpcore.AsyncConnectionPool(
                ssl_context=self._ssl_context,
                max_connections=self._limits.max_connections,
                max_keepalive_connections=self._limits.max_keepalive_connections,
                keepalive_expiry=self._limits.keepalive_expiry,
                network_backend=self._backend,
            )
        return pool

    def pools(self) -> list[httpcore.AsyncConnectionPool]:
        return list(self._pools.values())

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()


class Headers(dict):
    """Response headers by lower-case name, repeated fields joined by ", ", decoded as
    `httpx.Headers` decodes them (ASCII, else UTF-8, else Latin-1, for all of them at once),
    with the fields as received in `raw`."""

    def __init__(self, raw: list[tuple[bytes, bytes]]):
        super().__init__()
        self.raw = raw
        encoding = _encoding(raw)
        for name, value in raw:
            key, text = name.decode(encoding).lower(), value.decode(encoding)
            self[key] = f"{self[key]}, {text}" if key in self else text


def _encoding(raw: list[tuple[bytes, bytes]]) -> str:
    """As `httpx.Headers.encoding`: a Location or charset sent in UTF-8 reads the same on both paths."""
    for encoding in ("ascii", "utf-8"):
        try:
            for name, value in raw:
                name.decode(encoding)
                value.decode(encoding)
        except UnicodeDecodeError:
            continue
        return encoding
    return "iso-8859-1"


class DirectAnswer:
    """The parts of an `httpx.Response` the client reads, from an httpcore response."""

    __slots__ = ("_response", "status_code", "reason_phrase", "raw_reason", "http_version", "headers")

    def __init__(self, response: httpcore.Response):
        self._response = response
        self.status_code = response.status
        reason = self.raw_reason = response.extensions.get("reason_phrase")
        self.reason_phrase = httpx.codes.get_reason_phrase(response.status) if reason is None else reason.decode("ascii", errors="ignore")
        self.http_version = response.extensions.get("http_version", b"HTTP/1.1").decode("ascii", errors="ignore")
        self.headers = Headers(response.headers)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._response.aclose()


async def send(pool: httpcore.AsyncConnectionPool, url: httpx.URL, headers: list[tuple[bytes, bytes]], extensions: dict) -> DirectAnswer:
    """A GET of `url` on `pool`, its body left to stream; httpcore's errors raised as httpx's."""
    request = httpcore.Request(
        b"GET",
        httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
        headers=headers,
        extensions=extensions,
    )
    with _as_httpx_errors():
        return DirectAnswer(await pool.handle_async_request(request))


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise
