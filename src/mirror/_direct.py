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

import select
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpcore
import httpx

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
    the client's TLS context and limits), on a network backend that knows its sockets."""

    def __init__(self, ssl_context: ssl.SSLContext, limits: httpx.Limits):
        self._ssl_context, self._limits = ssl_context, limits
        self._pools: dict[tuple[bytes, str], httpcore.AsyncConnectionPool] = {}
        self._backend = _Backend()

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

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()


class _Backend(httpcore.AsyncNetworkBackend):
    """anyio's backend, whose streams look their socket up once (see `_Stream`)."""

    def __init__(self):
        self._anyio = httpcore.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._anyio.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path, timeout=None, socket_options=None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._anyio.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._anyio.sleep(seconds)


class _Stream(httpcore.AsyncNetworkStream):
    """An anyio stream whose socket is found once. httpcore asks whether every idle connection
    of a pool has become readable (closed by the server) twice per request, and anyio
    answers each question by building a dict of all its attributes."""

    def __init__(self, stream: httpcore.AsyncNetworkStream):
        self._stream = stream
        self._socket = stream.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str):
        if info == "socket":
            return self._socket
        if info == "is_readable":
            return _readable(self._socket)
        return self._stream.get_extra_info(info)


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read would return at once (data, or the b"" of a closed connection), as httpcore decides it."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if not hasattr(select, "poll"):
        return bool(select.select([fd], [], [], 0)[0])
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))


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
