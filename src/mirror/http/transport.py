"""httpcore's network backend on asyncio's own transports, for the resource pools (`direct`).

httpcore's anyio backend wraps every read and write in a cancel scope and a timeout scope,
and re-registers the socket with the event loop on each read (it reads only on demand);
for a 4 KB image that was a sixth of the fetching process's CPU per request. Here a
protocol keeps what arrives until httpcore reads it, and a read waits on one future with one
timer. Errors are httpcore's, raised as its anyio backend raises them (the same messages and
causes), so that a failure reads the same on both paths.
"""

from __future__ import annotations

import asyncio
import collections
import select
import socket
import ssl
from collections.abc import Callable
from typing import Any

import httpcore

__all__ = ["Backend"]

_BUFFERED = 256 * 1024  # read no further ahead of httpcore than this (a large body streams)


class Backend(httpcore.AsyncNetworkBackend):
    """`resolved(host)` gives the addresses a host name was looked up (and checked) to: the
    connection goes to those, in order, and never to a second lookup's answer, which could
    differ (DNS rebinding). A name not looked up is left to the loop's own lookup."""

    def __init__(self, resolved: Callable[[str], list[str] | None] | None = None) -> None:
        self._resolved = resolved

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options=None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        limit = asyncio.timeout(timeout)
        addresses = self._resolved(host.lower()) if self._resolved else None
        local = (local_address, 0) if local_address else None
        try:
            async with limit:
                if not addresses:
                    transport, protocol = await loop.create_connection(_Protocol, host, port, local_addr=local, happy_eyeballs_delay=0.25)
                else:
                    transport, protocol = await _first_connection(loop, addresses, port, local)
        except OSError as exc:  # TimeoutError is one: ours, or the kernel's ETIMEDOUT
            if limit.expired():
                raise httpcore.ConnectTimeout(exc) from exc
            if isinstance(exc, socket.gaierror):  # as anyio: the resolver's own error
                raise httpcore.ConnectError(exc) from exc
            failed = OSError("All connection attempts failed")  # as anyio: the attempt's error as its cause
            failed.__cause__ = exc
            raise httpcore.ConnectError(failed) from failed
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return _Stream(transport, protocol)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("unix sockets are not used for resources")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _first_connection(loop, addresses: list[str], port: int, local):
    """A connection to the first of `addresses` that takes one (each tried in turn)."""
    error: OSError | None = None
    for address in addresses:
        try:
            return await loop.create_connection(_Protocol, address, port, local_addr=local)
        except OSError as exc:
            if isinstance(exc, TimeoutError):
                raise
            error = exc
    raise error or OSError("no address to connect to")


class _Protocol(asyncio.Protocol):
    """What the connection has received and whether it has ended, for `_Stream` to read."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.ended = False
        self.error: BaseException | None = None
        self.reader: _Waiter | None = None  # a read waiting for data
        self.writer: _Waiter | None = None  # a write waiting for the buffer to drain
        self.reading_paused = self.writing_paused = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _BUFFERED and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        _wake(self.reader)

    def eof_received(self) -> bool:
        self.ended = True
        _wake(self.reader)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended, self.error = True, exc
        _wake(self.reader)
        _wake(self.writer)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        _wake(self.writer)


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol):
        self._transport, self._protocol = transport, protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.chunks and not protocol.ended:
            protocol.reader = _Waiter()
            try:
                await protocol.reader.wait(timeout, httpcore.ReadTimeout)
            finally:
                protocol.reader = None
        if protocol.chunks:
            chunk = protocol.chunks.popleft()
            if len(chunk) > max_bytes:
                protocol.chunks.appendleft(chunk[max_bytes:])
                chunk = chunk[:max_bytes]
            protocol.buffered -= len(chunk)
            if protocol.reading_paused and protocol.buffered <= _BUFFERED // 4:
                protocol.reading_paused = False
                self._transport.resume_reading()
            return chunk
        if isinstance(protocol.error, ssl.SSLError):  # as anyio: TLS failing mid-body is raised as it is
            raise protocol.error
        if protocol.error is not None:  # as anyio: a broken connection is a read error, its cause the OS's
            raise httpcore.ReadError() from protocol.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if protocol.error is not None or self._transport.is_closing():
            raise httpcore.WriteError() from protocol.error
        self._transport.write(buffer)
        if protocol.writing_paused:
            protocol.writer = _Waiter()
            try:
                await protocol.writer.wait(timeout, httpcore.WriteTimeout)
            finally:
                protocol.writer = None
            if protocol.error is not None:
                raise httpcore.WriteError() from protocol.error

    async def aclose(self) -> None:
        self._transport.abort()  # as anyio: nothing more is sent or read

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        limit = asyncio.timeout(timeout)
        try:
            async with limit:
                transport = await loop.start_tls(self._transport, self._protocol, ssl_context, server_hostname=server_hostname)
        except OSError as exc:  # ssl.SSLError is one
            self._transport.abort()
            raise (httpcore.ConnectTimeout if limit.expired() else httpcore.ConnectError)(exc) from exc
        self._protocol.transport = transport
        return _Stream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle connection the server closed, or that has data it should not
            protocol = self._protocol
            return protocol.ended or bool(protocol.chunks) or _readable(self._transport.get_extra_info("socket"))
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None


class _Waiter:
    """One future, ended by the protocol or by one timer."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def wait(self, timeout: float | None, error: type[httpcore.TimeoutException]) -> None:
        timer = None if timeout is None else asyncio.get_running_loop().call_later(timeout, _expire, self.future)
        try:
            await self.future
        except TimeoutError as exc:
            raise error(exc) from exc
        finally:
            if timer is not None:
                timer.cancel()


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


def _wake(waiter: _Waiter | None) -> None:
    if waiter is not None and not waiter.future.done():
        waiter.future.set_result(None)


def _readable(sock) -> bool:
    """Whether the kernel holds data or an end the event loop has not yet handed over."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if not hasattr(select, "poll"):
        return bool(select.select([fd], [], [], 0)[0])
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))
