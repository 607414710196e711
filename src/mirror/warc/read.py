"""Reading captures back: a record's payload or its first bytes, from a location the database
holds (which may be crafted); the fetcher's response records in a file (crash recovery); a crashed
run's truncated last record cut off.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders

from .._types import WarcLocation
from .._util.text import count
from .write import PAGE_HEADER, WARC_DIR, Original


class WarcError(ValueError):
    """A location that does not lead to a readable record in this archive's warc/ folder,
    or a payload that decodes past the limit it is read with."""


# What a capture is read back with at most, decoded: the fetcher's size limit counts decoded
# bytes too (`payload_coding`), so only a capture made with a larger --max-bytes (or a crafted
# one) reaches this, and it is refused rather than decoded into gigabytes.
READ_LIMIT = 100_000_000


def payload_coding(raw_headers: list[tuple[bytes, bytes]]) -> str:
    """The content coding a stored response's payload is decoded with when read back
    ("" for none), as warcio decides it: its first Content-Encoding field, lower-cased,
    if warcio decodes that coding, else none. (`Content-Encoding: gzip` twice is decoded
    once; `gzip, br` in one field not at all.) The fetcher counts a body's size this way."""
    for name, value in raw_headers:
        if name.lower() == b"content-encoding":
            try:  # as warcio reads a header line back: UTF-8, else Latin-1; Unicode spaces stripped
                text = value.decode("utf-8")
            except UnicodeDecodeError:
                text = value.decode("latin-1")
            coding = text.strip().lower()
            return coding if coding in BufferedReader.get_supported_decompressors() else ""
    return ""


def read_payload(archive_dir: Path, location: WarcLocation | None, limit: int = READ_LIMIT) -> tuple[StatusAndHeaders, bytes]:
    """The HTTP headers and decoded body of the record at `location`, decoded in pieces
    and refused (WarcError) past `limit` bytes.

    A response record gives its HTTP headers; a resource or conversion record (a
    browser's rendered DOM, a screenshot) gives its WARC Content-Type as headers.
    The location comes from the database, which may be crafted: see `_record_bytes`;
    None (a row without a saved copy) is no record either. Raises WarcError.
    """
    if location is None:
        raise WarcError("no saved copy")
    headers, body, more = _read(archive_dir, location, limit)
    if more:
        raise WarcError(f"{location.file}:{location.offset}: the payload decodes to more than {count(limit, 'byte', thousands=True)}")
    return headers, body


def read_head(archive_dir: Path, location: WarcLocation, size: int) -> tuple[StatusAndHeaders, bytes]:
    """The HTTP headers and the first `size` decoded bytes of the record at `location`."""
    headers, body, _ = _read(archive_dir, location, size)
    return headers, body[:size]


def _read(archive_dir: Path, location: WarcLocation, limit: int) -> tuple[StatusAndHeaders, bytes, bool]:
    """(headers, up to `limit` + 1 decoded bytes, whether there is more)."""
    data, where = _record_bytes(archive_dir, location)
    try:
        for record in ArchiveIterator(data):
            if record.rec_type not in _PAYLOAD_RECORDS:
                break
            headers = record.http_headers
            if headers is None:
                if record.rec_type == "response":
                    break
                headers = StatusAndHeaders("200 OK", [("Content-Type", record.rec_headers.get_header("Content-Type") or "")])
            stream, body = record.content_stream(), bytearray()
            while len(body) <= limit and (piece := stream.read(min(1 << 20, limit + 1 - len(body)))):
                body += piece  # warcio inflates a raw block of a few KB per read: bounded
            return headers, bytes(body), len(body) > limit
    except (ArchiveLoadFailed, ValueError, EOFError, zlib.error):
        raise WarcError(f"{where}: no WARC record there") from None
    raise WarcError(f"{where}: no WARC record there")


def record_id(archive_dir: Path, location: WarcLocation) -> str | None:
    """The WARC-Record-ID of the record at `location` (for WARC-Refers-To)."""
    try:
        data, _ = _record_bytes(archive_dir, location)
        for record in ArchiveIterator(data):
            return record.rec_headers.get_header("WARC-Record-ID")
    except (WarcError, ArchiveLoadFailed, ValueError, EOFError, zlib.error):
        return None
    return None


def original(archive_dir: Path, location: WarcLocation | None) -> Original | None:
    """What a revisit of the response record at `location` names (None: no location, unreadable, or no response)."""
    if location is None:
        return None
    try:
        data, _ = _record_bytes(archive_dir, location)
        for record in ArchiveIterator(data):
            headers = record.rec_headers
            if record.rec_type != "response" or not headers.get_header("WARC-Payload-Digest"):
                return None
            return Original(
                headers.get_header("WARC-Record-ID"),
                headers.get_header("WARC-Target-URI"),
                headers.get_header("WARC-Date"),
                headers.get_header("WARC-Payload-Digest"),
            )
    except (WarcError, ArchiveLoadFailed, ValueError, EOFError, zlib.error, OSError):
        return None
    return None


_PAYLOAD_RECORDS = {"response", "resource", "conversion"}


def _record_bytes(archive_dir: Path, location: WarcLocation) -> tuple[io.BytesIO, str]:
    """The raw bytes at `location`, read only from a file inside archive/warc/.

    Errors name the location, never the bytes found there.
    """
    folder = (Path(archive_dir) / WARC_DIR).resolve()
    name = str(location.file or "")
    path = (folder / name).resolve() if name and "\x00" not in name else folder
    if not path.is_relative_to(folder) or path == folder:
        raise WarcError(f"{name[:200]!r} is not a file in the archive's {WARC_DIR}/ folder")
    if not isinstance(location.offset, int) or not isinstance(location.length, int) or location.offset < 0 or location.length <= 0:
        raise WarcError(f"{name[:200]!r}: bad offset or length")
    where = f"{name[:200]}:{location.offset}"
    try:
        with open(path, "rb") as f:
            f.seek(location.offset)
            return io.BytesIO(f.read(location.length)), where
    except OSError as exc:
        raise WarcError(f"{where}: cannot read ({exc.strerror or type(exc).__name__})") from None


@dataclass(frozen=True)
class Response:
    """A response record as the fetcher wrote it: for which page, from where, with what."""

    page: str  # the URL the fetcher was asked for (before redirects)
    url: str
    status: int
    headers: StatusAndHeaders
    location: WarcLocation
    date: str
    truncated: bool


def responses(path: Path) -> Iterator[Response]:
    """The fetcher's response records in one WARC file, in the order they were written.

    Stops quietly at damage: a crashed run's file may end anywhere.
    """
    try:
        with open(path, "rb") as f:
            records = ArchiveIterator(f)
            for record in records:
                page = record.rec_headers.get_header(PAGE_HEADER)
                if record.rec_type != "response" or not page or record.http_headers is None:
                    records.read_to_end(record)
                    continue
                records.read_to_end(record)
                yield Response(
                    page=page,
                    url=record.rec_headers.get_header("WARC-Target-URI"),
                    status=int(record.http_headers.get_statuscode() or 0),
                    headers=record.http_headers,
                    location=WarcLocation(path.name, records.get_record_offset(), records.get_record_length()),
                    date=record.rec_headers.get_header("WARC-Date") or "",
                    truncated=record.rec_headers.get_header("WARC-Truncated") is not None,
                )
    except (ArchiveLoadFailed, OSError, ValueError, zlib.error, EOFError):
        return


def repair(paths: Iterable[Path]) -> list[tuple[Path, int]]:
    """Cut a truncated last record off WARC files left open by a crash.

    Returns (file, bytes removed) for every file that was cut.
    """
    cut: list[tuple[Path, int]] = []
    for path in paths:
        if not path.exists():
            continue
        good_end = _last_good_offset(path)
        size = path.stat().st_size
        if good_end < size:
            with open(path, "r+b") as f:
                f.truncate(good_end)
            cut.append((path, size - good_end))
    return cut


def _last_good_offset(path: Path) -> int:
    """End of the last complete gzip member: each member holds one whole record."""
    good = offset = 0
    decoder = zlib.decompressobj(31)
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                while chunk:
                    decoder.decompress(chunk)
                    if not decoder.eof:
                        offset += len(chunk)
                        break
                    offset += len(chunk) - len(decoder.unused_data)
                    good = offset
                    chunk = decoder.unused_data
                    decoder = zlib.decompressobj(31)
    except zlib.error:
        pass
    return good
