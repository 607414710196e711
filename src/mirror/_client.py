"""The polite HTTP client: per-host gates, whole-request deadlines, bounded bodies.

One `Exchange` is a GET with its redirects followed by hand, so that every hop
is captured to WARC and the chain is kept. Bodies are read raw and decoded
incrementally only to count their size, so a gzip bomb is refused with
bounded memory.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import ssl
import tempfile
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from ._blocked import HINT, blocked_reason
from .warc import Capture, CaptureWriter, WarcLocation

HEAD_BYTES = 64 * 1024  # decoded bytes kept for recognising blocked pages
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 507, 509, 520, 521, 522, 523, 524})


@dataclass
class Exchange:
    """A request and the redirects it led to: one attempt at a URL."""

    url: str
    final_url: str
    status: int | None = None
    error: str | None = None  # reason category: timeout, dns, http_404, blocked, ...
    message: str | None = None
    redirects: list[str] = field(default_factory=list)
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    location: WarcLocation | None = None
    retry_after: float | None = None
    redirect_to: str | None = None  # Location of a 3xx hop, before it is followed
    started_at: float = 0.0
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None and (200 <= self.status < 300 or self.status == 304)

    @property
    def retryable(self) -> bool:
        if self.error in ("timeout", "connect", "reset", "protocol"):
            return True
        return self.error != "blocked" and self.status in RETRY_STATUSES


class HostGate:
    """At most `per_host` requests in flight to one host, starting `delay` apart."""

    def __init__(self, per_host: int, delay: float):
        self._slots = asyncio.Semaphore(per_host)
        self._lock = asyncio.Lock()
        self._delay = delay
        self._next_start = 0.0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            async with self._lock:
                loop = asyncio.get_running_loop()
                wait = self._next_start - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._next_start = loop.time() + self._delay
            yield


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
    ):
        self.writer = writer
        self.per_host, self.delay = per_host, delay
        self.timeout, self.max_bytes, self.max_redirects = timeout, max_bytes, max_redirects
        self._global = asyncio.Semaphore(concurrency)
        self._gates: dict[str, HostGate] = {}
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._headers, self._cookies = headers, cookies
        self._tls = httpx.create_ssl_context()  # built once: it costs tens of milliseconds

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()

    def _http(self, url: str) -> httpx.AsyncClient:
        """One connection pool per host: httpx checks every pooled connection on each request."""
        host = (urlsplit(url).netloc or "").lower()
        if host not in self._clients:
            self._clients[host] = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(self.timeout),
                headers=self._headers,
                cookies=self._cookies,  # one shared jar: each cookie still goes only to its domain
                verify=self._tls,
                trust_env=True,  # HTTP_PROXY / HTTPS_PROXY / NO_PROXY
                limits=httpx.Limits(max_connections=self.per_host, max_keepalive_connections=self.per_host),
            )
        return self._clients[host]

    async def get(self, url: str, headers: dict[str, str] | None = None) -> Exchange:
        """GET `url`, following up to max_redirects redirects by hand."""
        chain = [url]
        current = url
        started: float | None = None
        for _ in range(self.max_redirects + 1):
            hop = await self._hop(current, headers or {}, original=url)
            started = started or hop.started_at  # time spent queueing for a host is not counted
            hop.url, hop.redirects = url, chain[1:]
            hop.elapsed += hop.started_at - started
            hop.started_at = started
            if hop.error or hop.redirect_to is None:
                return hop
            nxt = urljoin(current, hop.redirect_to)
            if urlsplit(nxt).scheme not in ("http", "https"):
                return _failed(url, nxt, "redirect_scheme", f"redirected to a non-web URL: {nxt}", chain[1:], started)
            if nxt in chain:
                return _failed(url, nxt, "redirect_loop", f"redirect loop: {' -> '.join(chain + [nxt])}", chain[1:], started)
            chain.append(nxt)
            current = nxt
        return _failed(url, current, "too_many_redirects", f"more than {self.max_redirects} redirects", chain[1:], started)

    async def get_json(self, url: str) -> Any:
        """A small JSON API answer (the Wayback availability API), politely, not captured."""
        async with self._gate(url).slot(), self._global:
            async with asyncio.timeout(self.timeout):
                response = await self._http(url).get(url)
        response.raise_for_status()
        return response.json()

    def _gate(self, url: str) -> HostGate:
        host = (urlsplit(url).netloc or "").lower()
        if host not in self._gates:
            self._gates[host] = HostGate(self.per_host, self.delay)
        return self._gates[host]

    async def _hop(self, url: str, headers: dict[str, str], original: str) -> Exchange:
        http = self._http(url)  # set up before the gate's clock starts, so the gap is the server's
        async with self._gate(url).slot(), self._global:
            hop = Exchange(url=url, final_url=url, started_at=time.time())
            try:
                async with asyncio.timeout(self.timeout):
                    request = http.build_request("GET", url, headers=headers)
                    response = await http.send(request, stream=True)
                    try:
                        body, head, truncated = await self._read_body(response)
                    finally:
                        await response.aclose()
            except TimeoutError:
                return _failed(url, url, "timeout", f"no complete response within {self.timeout:g} s", started=hop.started_at)
            except httpx.HTTPError as exc:
                category, message = _classify_error(exc)
                return _failed(url, url, category, message, started=hop.started_at)
            except (ssl.SSLError, OSError) as exc:
                return _failed(url, url, "connect", str(exc) or type(exc).__name__, started=hop.started_at)
        hop.elapsed = time.time() - hop.started_at
        hop.status = response.status_code
        hop.content_type = response.headers.get("content-type")
        hop.etag = response.headers.get("etag")
        hop.last_modified = response.headers.get("last-modified")
        extra = {"WARC-Truncated": "length"} if truncated else None
        hop.location = self.writer.write(
            Capture(
                url=url,
                method="GET",
                request_headers=[(k, v) for k, v in request.headers.items()],
                status=response.status_code,
                reason=response.reason_phrase,
                http_version=response.http_version,
                response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
                body=body,
                extra_warc_headers=extra,
            )
        )
        body.close()
        if truncated:
            hop.error, hop.message = "too_large", f"body larger than {self.max_bytes:,} bytes (decoded); refused"
            return hop
        if 300 <= response.status_code < 400 and response.status_code != 304 and "location" in response.headers:
            hop.redirect_to = response.headers["location"]
            return hop
        text = _decode_head(head, response)
        reason = blocked_reason(response.status_code, url, original, text) if _is_htmlish(hop.content_type) or response.status_code >= 400 else None
        if reason:
            hop.error, hop.message = "blocked", f"{reason}; {HINT}"
        elif response.status_code >= 400:
            hop.error = f"http_{response.status_code}"
            hop.message = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            hop.retry_after = _retry_after(response.headers.get("retry-after"))
        return hop

    async def _read_body(self, response: httpx.Response) -> tuple[tempfile.SpooledTemporaryFile, bytes, bool]:
        body = tempfile.SpooledTemporaryFile(max_size=1 << 20)
        declared = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "").lower().strip()
        if declared.isdigit() and int(declared) > self.max_bytes and encoding in ("", "identity"):
            return body, b"", True
        decoder = _SizeCounter(encoding, self.max_bytes)
        async for chunk in response.aiter_raw():
            body.write(chunk)
            if decoder.feed(chunk):
                return body, bytes(decoder.head), True
        return body, bytes(decoder.head), False


class _SizeCounter:
    """Decodes gzip/deflate in bounded pieces to count the decoded size."""

    def __init__(self, encoding: str, limit: int):
        self.limit = limit
        self.total = 0
        self.head = bytearray()
        self._zlib = None
        if encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj()
        self._encoding = encoding

    def feed(self, chunk: bytes) -> bool:
        """Count one raw chunk; True once the decoded size passes the limit."""
        if self._zlib is None:
            return self._count(chunk)
        data = chunk
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


def _failed(url: str, final: str, category: str, message: str, redirects: list[str] | None = None, started: float | None = None) -> Exchange:
    now = time.time()
    return Exchange(
        url=url,
        final_url=final,
        error=category,
        message=message,
        redirects=redirects or [],
        started_at=started or now,
        elapsed=now - (started or now),
    )


def _classify_error(exc: httpx.HTTPError) -> tuple[str, str]:
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"timed out: {text}"
    if isinstance(exc, httpx.ConnectError):
        if any(s in lowered for s in ("name or service", "nodename nor servname", "getaddrinfo", "temporary failure in name", "no address associated")):
            return "dns", f"host name not found: {text}"
        if "ssl" in lowered or "certificate" in lowered:
            return "tls", f"TLS failure: {text}"
        return "connect", f"cannot connect: {text}"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return "reset", f"connection broken: {text}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol", f"bad response: {text}"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "scheme", text
    if isinstance(exc, httpx.ProxyError):
        return "proxy", f"proxy failure: {text}"
    return "http_error", text


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


def _is_htmlish(content_type: str | None) -> bool:
    return content_type is None or any(t in content_type.lower() for t in ("html", "xml", "text/plain"))


def _decode_head(head: bytes, response: httpx.Response) -> str:
    charset = response.charset_encoding or "utf-8"
    try:
        return head.decode(charset, errors="replace")
    except LookupError:
        return head.decode("utf-8", errors="replace")
