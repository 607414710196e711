"""Page resources through httpcore's pool directly, without httpx's request and response models.

A page shows three or four images; building an `httpx.Request` (three URL parses), a
`Response`, a cookie pass each way and the client's wrappers cost about as much CPU as the
exchange itself. For a resource on a host whose client holds no cookies and reaches the
server without a proxy, the request goes to the very pool that client owns, with the
headers it would send, and what is written to WARC is the same. Anything else (cookies,
a proxy, a client whose internals are not the ones known here) takes the httpx path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpcore
import httpx

__all__ = ["DirectAnswer", "Headers", "pool_for", "send"]

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


def pool_for(client: httpx.AsyncClient, url: httpx.URL) -> httpcore.AsyncConnectionPool | None:
    """The connection pool `client` would send `url` to, if that is its own transport's plain
    httpcore pool (not a proxy the environment names, not internals this version does not know)."""
    try:
        transport = client._transport_for_url(url)
        if transport is not client._transport:
            return None
        pool = transport._pool
    except AttributeError:
        return None
    return pool if type(pool) is httpcore.AsyncConnectionPool else None


class Headers(dict):
    """Response headers by lower-case name, repeated fields joined by ", " (as `httpx.Headers.get`),
    with the fields as received in `raw`."""

    def __init__(self, raw: list[tuple[bytes, bytes]]):
        super().__init__()
        self.raw = raw
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            self[key] = f"{self[key]}, {text}" if key in self else text


class DirectAnswer:
    """The parts of an `httpx.Response` the client reads, from an httpcore response."""

    __slots__ = ("_response", "status_code", "reason_phrase", "http_version", "headers")

    def __init__(self, response: httpcore.Response):
        self._response = response
        self.status_code = response.status
        reason = response.extensions.get("reason_phrase")
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
