"""Writing captures: each fetch run appends gzip-per-record WARC files under `archive/warc/`,
rotated at a size limit. A record is flushed before the database points at it, so a kill -9
can at worst leave a truncated last record (`read.repair` cuts it off on the next run).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .._types import WarcLocation

WARC_DIR = "warc"
# Names the page a response was fetched for (the URL before redirects), so that a
# response written just before a crash can be recovered without fetching it again.
PAGE_HEADER = "Mirror-Page"
# Names the page a browser rendering received a response for (its scripts, styles, data): a
# WACZ export of that page takes them along. Not PAGE_HEADER: crash recovery must not take a
# rendering's response for the page's own capture.
RENDER_HEADER = "Mirror-Rendered-For"
# Names the file a page added by the user came from (`mirror add`, an upload): its records were
# not fetched by mirror, and say so. They carry RENDER_HEADER too: the page's WACZ takes them along.
ADDED_HEADER = "Mirror-Added-From"
DEFAULT_ROTATE_BYTES = 512 * 1024 * 1024
GZIP_LEVEL = 1  # fetching is CPU-bound on extraction: a fast level, ~20% larger files
# Payloads that are compressed already (images, archives, gzip-encoded bodies) are stored in
# their gzip member without trying to compress them again: the same bytes, no CPU.
_COMPRESSED_TYPES = re.compile(
    r"^(image/(?!svg|bmp|x-icon|vnd\.microsoft)|video/|audio/|font/woff|application/(zip|gzip|x-gzip|x-7z|x-rar|x-xz|zstd|pdf|woff))", re.I
)
_COMPRESSED_ENCODINGS = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd"})
# Hop-by-hop framing that no longer describes the de-chunked payload we store.
_FRAMING = {"transfer-encoding", "content-length"}


@dataclass
class Capture:
    """One HTTP exchange as received: what the WARC response record holds."""

    url: str
    method: str
    request_headers: list[tuple[str, str]]
    status: int
    reason: str
    http_version: str
    response_headers: list[tuple[str, str]]
    body: BinaryIO  # raw payload as sent (still content-encoded), seekable
    extra_warc_headers: dict[str, str] | None = None
    target: str | None = None  # the request line's target as sent (default: from `url`, percent-encoded)
    with_request: bool = True  # False: no request was made (a page the user's browser saved): its response record alone
    date: str | None = None  # WARC-Date (default: now); a saved page's is when the browser saved it


@dataclass(frozen=True)
class Original:
    """A response record that a later capture repeats byte for byte: what its revisit record names."""

    record_id: str
    url: str
    date: str
    payload_digest: str


REVISIT_PROFILE = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"


@dataclass
class Derived:
    """Something we made from a capture, not received: a rendered DOM, a screenshot.

    Written as a `conversion` or `resource` record; `refers_to` is the
    WARC-Record-ID of the capture it was made from.
    """

    url: str  # WARC-Target-URI
    content_type: str
    body: bytes
    record_type: str = "resource"  # or "conversion"
    refers_to: str | None = None
    refers_to_url: str | None = None
    extra_warc_headers: dict[str, str] | None = None


class CaptureWriter:
    """Appends request/response pairs to rotating .warc.gz files."""

    def __init__(self, archive_dir: Path, rotate_bytes: int = DEFAULT_ROTATE_BYTES, prefix: str = "mirror", info: dict[str, str] | None = None):
        """`info`: the fields of the warcinfo record each file opens with (what made it, the run's
        settings), as Heritrix, Browsertrix and pywb write one: tools read it to know a file's origin."""
        self.info = info
        self.dir = Path(archive_dir) / WARC_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rotate_bytes = rotate_bytes
        self.prefix = prefix
        self._file: BinaryIO | None = None
        self._name: str | None = None
        self._serial = 0
        self.opened: list[str] = []  # every file this writer created
        self.unfinished: list[str] = []  # files a failed write may have left damaged

    def write(self, capture: Capture) -> WarcLocation:
        """A response record and its request record; returns where the response is."""
        return self.write_many([capture])[0]

    def write_revisit(self, capture: Capture, original: Original) -> WarcLocation:
        """A revisit record (identical-payload-digest profile: the HTTP head, no body) for a capture
        whose payload is `original`'s; returns where it is. Its request record is left out (it asked
        what the original's asked), and so is the page header (crash recovery reads responses only):
        a re-check of an unchanged page adds a few hundred bytes."""
        return self._append([_revisit_record(capture, _now(), original)], [0])[0]

    def write_many(self, items: list[Capture | Derived]) -> list[WarcLocation]:
        """Several records in one file with one flush: a browser capture is all or nothing.

        Returns the location of each item (of the response record for a Capture).
        """
        builder: WARCWriter | None = None  # for derived records only: it looks the host name up
        members: list[bytes] = []
        heads: list[int] = []  # index in members of each item's located record
        for item in items:
            heads.append(len(members))
            if isinstance(item, Capture):
                members += _capture_records(item, item.date or _now())
            else:
                level = 0 if _COMPRESSED_TYPES.match(item.content_type) else GZIP_LEVEL
                builder = builder or WARCWriter(None, gzip=False)
                members.append(_gzip_member(_derived_record(builder, item), level))
        return self._append(members, heads)

    def _append(self, members: list[bytes], heads: list[int]) -> list[WarcLocation]:
        """Records (gzip members) appended with one flush; the locations of those at `heads`."""
        out = self._current()
        start = out.tell()
        try:
            out.write(b"".join(members))
            out.flush()
        except OSError:
            self._abandon(start)
            raise
        assert self._name is not None
        offsets = [start]
        for member in members:
            offsets.append(offsets[-1] + len(member))
        locations = [WarcLocation(self._name, offsets[i], len(members[i])) for i in heads]
        if offsets[-1] >= self.rotate_bytes:
            self.close()
        return locations

    def _abandon(self, start: int) -> None:
        """After a failed write: cut the half record if we can; the next run's repair checks the file."""
        file, self._file = self._file, None
        if file is None or self._name is None:  # (nothing was open)
            return
        self.unfinished.append(self._name)
        try:
            os.ftruncate(file.fileno(), start)
        except OSError:
            pass
        try:
            file.close()
        except OSError:
            pass

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def _current(self) -> BinaryIO:
        if self._file is None:
            self._serial += 1
            stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
            self._name = f"{self.prefix}-{stamp}-{os.getpid()}-{self._serial:05d}.warc.gz"
            self._file = open(self.dir / self._name, "ab")
            self.opened.append(self._name)
            record = WARCWriter(None, gzip=False).create_warcinfo_record(self._name, self.info or {"software": software()})
            self._file.write(_gzip_member(record, GZIP_LEVEL))  # (flushed with the first capture, which needs it before it)
        return self._file


def software() -> str:
    """What wrote a WARC file: mirror's version, and warcio's, which writes its records."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mirror/{version('mirror')} warcio/{version('warcio')}"
    except PackageNotFoundError:
        return "mirror"


def _level(capture: Capture) -> int:
    headers = {k.lower(): v for k, v in capture.response_headers}
    if headers.get("content-encoding", "").strip().lower() in _COMPRESSED_ENCODINGS:
        return 0
    return 0 if _COMPRESSED_TYPES.match(headers.get("content-type", "").strip()) else GZIP_LEVEL


def _gzip_member(record, level: int) -> bytes:
    """One warcio record as one gzip member (warcio's own writer compresses at level 9, 3x slower)."""
    buffer = io.BytesIO()
    WARCWriter(buffer, gzip=False).write_record(record)
    compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return compressor.compress(buffer.getvalue()) + compressor.flush()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # WARC 1.0: seconds


def payload_digest(body: BinaryIO) -> str:
    """The WARC-Payload-Digest a response record of `body` has."""
    digest = hashlib.sha1()
    for piece in _pieces(body):
        digest.update(piece)
    return _sha1(digest)


def _response_head(capture: Capture) -> StatusAndHeaders:
    """The response's status line and headers as stored: framing replaced by the payload's length."""
    headers = [(k, v) for k, v in capture.response_headers if k.lower() not in _FRAMING]
    capture.body.seek(0, io.SEEK_END)
    headers.append(("Content-Length", str(capture.body.tell())))
    status_line = f"{capture.status} {capture.reason or ''}".strip()
    return StatusAndHeaders(status_line, headers, protocol=capture.http_version or "HTTP/1.1")


def _revisit_record(capture: Capture, date: str, original: Original) -> bytes:
    """The head of `capture`'s response, as a revisit of `original` (whose payload it repeats)."""
    http_response = _response_head(capture)
    extra = [(k, v) for k, v in (capture.extra_warc_headers or {}).items() if k != PAGE_HEADER]
    extra += [
        ("WARC-Profile", REVISIT_PROFILE),
        ("WARC-Refers-To", original.record_id),
        ("WARC-Refers-To-Target-URI", original.url),
        ("WARC-Refers-To-Date", original.date),
    ]
    return _record("revisit", _record_id(), capture.url, date, extra, http_response, None, GZIP_LEVEL, original.payload_digest)


def _capture_records(capture: Capture, date: str) -> tuple[bytes, ...]:
    """The response record and its request record as gzip members, byte for byte as warcio's
    writer writes them (its StatusAndHeaders serialize the HTTP headers): warcio's record
    builder reads the body twice for its digests and rescans its header list for each field it
    sets, which cost a small image more than the rest of fetching it."""
    http_response = _response_head(capture)
    http_request = StatusAndHeaders(
        f"{capture.method} {capture.target or _target(capture.url)} HTTP/1.1", capture.request_headers, is_http_request=True
    )
    response_id = _record_id()
    extra = list((capture.extra_warc_headers or {}).items())
    response = _record("response", response_id, capture.url, date, extra, http_response, capture.body, _level(capture))
    if not capture.with_request:
        return (response,)
    request = _record("request", _record_id(), capture.url, date, [("WARC-Concurrent-To", response_id)], http_request, None, GZIP_LEVEL)
    return response, request


def _record(
    kind: str,
    record_id: str,
    url: str,
    date: str,
    extra: list[tuple[str, str]],
    http: StatusAndHeaders,
    body: BinaryIO | None,
    level: int,
    payload_digest: str | None = None,
) -> bytes:
    """One record as one gzip member; the body is read in pieces (it may be tens of megabytes)."""
    block = _head_bytes(http)
    payload, whole, size = hashlib.sha1(), hashlib.sha1(block), 0
    for piece in _pieces(body):
        payload.update(piece)
        whole.update(piece)
        size += len(piece)
    fields = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", url),
        ("WARC-Date", date),
        *extra,
        ("WARC-Payload-Digest", payload_digest or _sha1(payload)),
        ("WARC-Block-Digest", _sha1(whole)),
        ("Content-Type", f"application/http; msgtype={'response' if kind == 'revisit' else kind}"),
        ("Content-Length", str(len(block) + size)),
    ]
    head = "WARC/1.0\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields) + "\r\n"  # as warcio: UTF-8
    compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    member = [compressor.compress(head.encode("utf-8") + block)]
    member += [compressor.compress(piece) for piece in _pieces(body)]
    member += [compressor.compress(b"\r\n\r\n"), compressor.flush()]
    return b"".join(member)


def _head_bytes(http: StatusAndHeaders) -> bytes:
    """An HTTP head as the record holds it: as warcio writes it (non-ASCII values it can
    percent-encode, percent-encoded); a head warcio cannot write (`X-Note: a=é;b é`, a status
    text `200 Café`, which servers and pages send) as the bytes that came over the wire: our heads are the raw bytes decoded as Latin-1, so
    encoding back gives them exactly; a character past Latin-1 (from the browser, which
    decodes UTF-8) is written as UTF-8. warcio reads either back (UTF-8, else Latin-1).
    warcio's own `to_ascii_bytes` raises on values it cannot percent-encode (`a=é;b é`)."""
    http.statusline = _one_line(http.statusline)
    http.headers = [(_one_line(name), _one_line(value)) for name, value in http.headers]
    original = list(http.headers)
    try:
        return http.to_ascii_bytes()  # warcio's way: a non-ASCII value it can %-encode, %-encoded
    except (UnicodeError, ValueError):
        http.headers = original  # (it changed some before giving up)
    text = http.to_str()
    try:
        return text.encode("latin-1") + b"\r\n"
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass") + b"\r\n"


def _one_line(value: str) -> str:
    """No line break inside a header: one would forge a header (or the record's end) of its own."""
    return value.replace("\r", " ").replace("\n", " ") if "\r" in value or "\n" in value else value


def _pieces(body: BinaryIO | None) -> Iterator[bytes]:
    if body is not None:
        body.seek(0)
        while piece := body.read(1 << 20):
            yield piece
        body.seek(0)


def _record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _sha1(digest) -> str:
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def _derived_record(writer: WARCWriter, item: Derived):
    headers = {"Content-Type": item.content_type}
    if item.refers_to:
        headers["WARC-Refers-To"] = item.refers_to
    if item.refers_to_url:
        headers["WARC-Refers-To-Target-URI"] = item.refers_to_url
    headers.update(item.extra_warc_headers or {})
    return writer.create_warc_record(
        item.url,
        item.record_type,
        payload=io.BytesIO(item.body),
        length=len(item.body),
        warc_content_type=item.content_type,
        warc_headers_dict=headers,
    )


def _target(url: str) -> str:
    """The request target of `url` as a client sends it: a redirect to `/搜索` is asked for
    as `/%E6%90%9C%E7%B4%A2`, and an HTTP request line is ASCII."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return quote(target, safe="!#$%&'()*+,/:;=?@[]~")
