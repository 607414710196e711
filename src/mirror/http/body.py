"""A response's body read raw into a spooled file, its decoded size counted in bounded memory
(a gzip bomb is refused), and the head kept for recognising blocked pages."""

from __future__ import annotations

import email.message
import tempfile
import zlib
from typing import NamedTuple

import httpx

from .._util.text import decode
from ..warc import payload_coding

__all__ = ["HEAD_BYTES", "Body", "decode_head", "is_htmlish", "raw_reason", "read_body"]

HEAD_BYTES = 64 * 1024  # decoded bytes kept for recognising blocked pages
# Deflate expands at most 1032:1 (a 258-byte match in two bits), so a body whose raw size
# is at most limit / 1032 cannot decode past the limit.
MAX_DEFLATE_RATIO = 1032


class Body(NamedTuple):
    """A response's body as read."""

    raw: tempfile.SpooledTemporaryFile[bytes]  # as sent (compressed, if it was)
    head: bytes  # its first HEAD_BYTES, decoded
    truncated: bool  # cut at the size limit (decoded)


async def read_body(response: httpx.Response, max_bytes: int) -> Body:
    """The raw body, its decoded head, and whether it was cut at `max_bytes` (decoded)."""
    body = tempfile.SpooledTemporaryFile(max_size=1 << 20)
    declared = response.headers.get("content-length", "")
    encoding = payload_coding(response.headers.raw)  # what reading the capture back will decode
    if declared.isdigit() and int(declared) > max_bytes and not encoding:
        return Body(body, b"", True)
    decoder = _SizeCounter(encoding, max_bytes)
    async for chunk in response.aiter_raw():
        body.write(chunk)
        if decoder.feed(chunk):
            return Body(body, bytes(decoder.head), True)
    return Body(body, bytes(decoder.head), False)


def raw_reason(response: httpx.Response) -> str:
    """The status text as sent (httpx keeps only its ASCII characters), as Latin-1 like the
    headers: the WARC record writes it back as the same bytes (`warc.write._head_bytes`)."""
    raw = response.extensions.get("reason_phrase")
    return raw.decode("latin-1") if isinstance(raw, bytes) else response.reason_phrase


def is_htmlish(content_type: str | None) -> bool:
    return content_type is None or any(t in content_type.lower() for t in ("html", "xml", "text/plain"))


def decode_head(head: bytes, response: httpx.Response) -> str:
    text = decode(head, _charset(response.headers.get("content-type")), errors="replace")
    return head.decode("utf-8", errors="replace") if text is None else text


def _charset(content_type: str | None) -> str | None:
    """The charset a Content-Type names (parsed as `httpx.Response.charset_encoding` does)."""
    if content_type is None:
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    return message.get_content_charset(failobj=None)


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
