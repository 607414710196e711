"""Some of an archive's records copied into one WARC file: what a WACZ export of a few pages holds.

Records are copied byte for byte (each is its own gzip member, so members laid end to end are a
valid .warc.gz); nothing is decoded and written again, so digests and dates stay the originals.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.warcwriter import WARCWriter

from .write import PAGE_HEADER, RENDER_HEADER, WARC_DIR

# A record that points at a kept one belongs with it: a rendered DOM or a screenshot at the capture
# it was made from. Request records are left out: they hold what the user sent (cookies, tokens),
# and replay needs only the responses.
_POINTER = "WARC-Refers-To"
_NAME = re.compile(r"(?P<run>.+)-(?P<stamp>\d{14})-(?P<pid>\d+)-(?P<serial>\d+)\.warc\.gz")


@dataclass
class Subset:
    damaged: list[str] | None = None  # files that ended in a damaged record (read up to it)
    copied: set[tuple[str, int]] = field(default_factory=set)  # (file, offset) of every record copied
    started: set[str] = field(default_factory=set)  # pages whose fetch's first response was copied


def copy_records(
    archive_dir: Path, out: Path, *, locations: Collection[tuple[str, int]], pages: Collection[str], software: str, redirected: Collection[str] = ()
) -> Subset:
    """Write to `out` a warcinfo record, then every record that is at one of `locations` (file,
    offset), was fetched or rendered for one of `pages`, or points at a record kept (a rendered
    DOM, a screenshot); no request record.

    Only the files of `locations` are read, and the one their writer filled before each: the
    records of a page's fetch (its redirects, the responses of its rendering) are written where its
    capture, attempt or screenshot is, or just before a rotation, so a list's export does not read
    the whole archive. A page of `redirected` whose first response is not found there (a slow
    redirect in a busy run) is looked for in its writer's earlier files, newest first."""
    folder = Path(archive_dir) / WARC_DIR
    wanted = {(str(file), int(offset)) for file, offset in locations}
    pages = set(pages)
    kept_ids: set[str] = set()
    subset = Subset()
    present = sorted(folder.glob("*.warc.gz"))
    before = _writers_files([path.name for path in present])
    wanted_files = {file for file, _ in wanted}
    files = wanted_files | {previous for name in wanted_files if (previous := before.get(name))}
    redirected = set(redirected)
    with open(out, "wb") as sink:
        WARCWriter(sink, gzip=True).write_record(_warcinfo(out.name, software))
        for path in (path for path in present if path.name in files):
            _copy_or_report(path, sink, wanted, pages, kept_ids, subset)
        if redirected - subset.started:
            earlier = {name for start in wanted_files for name in _chain(before, start)[1:]} - files
            for name in sorted(earlier, reverse=True):
                if not redirected - subset.started:
                    break
                _copy_or_report(folder / name, sink, wanted, pages, kept_ids, subset)
    return subset


def _copy_or_report(path: Path, sink, wanted: set[tuple[str, int]], pages: set[str], kept_ids: set[str], subset: Subset) -> None:
    if not _copy_file(path, sink, wanted, pages, kept_ids, subset):
        subset.damaged = [*(subset.damaged or []), path.name]


def _writers_files(names: list[str]) -> dict[str, str]:
    """Each file -> the file its writer filled just before it (`CaptureWriter` names them
    prefix-time-pid-serial; a pid used again by a later run: the latest file before each)."""
    places: dict[tuple[str, str, int], list[tuple[str, str]]] = {}
    for name in names:
        if found := _NAME.fullmatch(name):
            places.setdefault((found["run"], found["pid"], int(found["serial"])), []).append((found["stamp"], name))
    before: dict[str, str] = {}
    for (run, pid, serial), files in places.items():
        for stamp, name in files:
            earlier = [(s, f) for s, f in places.get((run, pid, serial - 1), []) if s <= stamp]
            if earlier:
                before[name] = max(earlier)[1]
    return before


def _chain(before: dict[str, str], name: str) -> list[str]:
    """The files `name`'s writer filled before it, newest first."""
    chain = []
    while (earlier := before.get(name)) is not None:
        chain.append(earlier)
        name = earlier
    return chain


def _copy_file(path: Path, sink, wanted: set[tuple[str, int]], pages: set[str], kept_ids: set[str], subset: Subset) -> bool:
    """Copy `path`'s kept records; False when the file ends in damage (a crashed run's last record)."""
    try:
        with open(path, "rb") as source, open(path, "rb") as raw:
            records = ArchiveIterator(source)
            for record in records:
                if record.format != "warc":  # warcio reads any bytes as an old ARC record
                    return False
                headers = record.rec_headers
                keep = (
                    (path.name, records.get_record_offset()) in wanted
                    or (headers.get_header(PAGE_HEADER) or headers.get_header(RENDER_HEADER)) in pages
                    or headers.get_header(_POINTER) in kept_ids
                )
                records.read_to_end(record)
                if not keep or record.rec_type == "request":
                    continue
                kept_ids.add(headers.get_header("WARC-Record-ID"))
                if headers.get_header(PAGE_HEADER) == headers.get_header("WARC-Target-URI"):
                    subset.started.add(headers.get_header(PAGE_HEADER))
                raw.seek(records.get_record_offset())
                sink.write(raw.read(records.get_record_length()))
                subset.copied.add((path.name, records.get_record_offset()))
    except (ArchiveLoadFailed, ValueError, EOFError, zlib.error, AttributeError, TypeError, KeyError):
        return False  # warcio fails in these ways on damaged or crafted bytes
    return True


def _warcinfo(filename: str, software: str):
    writer = WARCWriter(None, gzip=True)
    return writer.create_warcinfo_record(
        filename, {"software": software, "format": "WARC File Format 1.0", "description": "pages exported from a mirror archive"}
    )
