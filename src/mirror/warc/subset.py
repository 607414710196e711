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


def copy_records(archive_dir: Path, out: Path, *, locations: Collection[tuple[str, int]], pages: Collection[str],
                 software: str) -> Subset:
    """Write to `out` a warcinfo record, then every record that is at one of `locations` (file,
    offset), was fetched or rendered for one of `pages`, or points at a record kept (a rendered
    DOM, a screenshot), in the order they were written; no request record.

    Only the files of `locations` are read: the records of a page's fetch (its redirects, the
    responses of its rendering) are written to the file its capture, attempt or screenshot is in
    (or to the one before, when the writer rotated between them), so a list's export does not
    read the whole archive."""
    folder = Path(archive_dir) / WARC_DIR
    wanted = {(str(file), int(offset)) for file, offset in locations}
    pages = set(pages)
    kept_ids: set[str] = set()
    subset = Subset()
    present = sorted(folder.glob("*.warc.gz"))
    files = _with_predecessors({file for file, _ in wanted}, [path.name for path in present])
    with open(out, "wb") as sink:
        WARCWriter(sink, gzip=True).write_record(_warcinfo(out.name, software))
        for path in (path for path in present if path.name in files):
            if not _copy_file(path, sink, wanted, pages, kept_ids, subset):
                subset.damaged = [*(subset.damaged or []), path.name]
    return subset


def _with_predecessors(files: set[str], names: list[str]) -> set[str]:
    """`files` and, for each, the file its writer filled before it (`CaptureWriter` names them
    prefix-time-pid-serial): a redirect written just before a rotation is there."""
    def place(name: str) -> tuple[str, str, int, str] | None:
        found = _NAME.fullmatch(name)
        return (found["run"], found["pid"], int(found["serial"]), found["stamp"]) if found else None

    written = [(found, name) for name in names if (found := place(name))]
    before = set()
    for name in files:
        if here := place(name):
            run, pid, serial, stamp = here
            earlier = [(s, n) for (r, p, k, s), n in written if (r, p, k) == (run, pid, serial - 1) and s <= stamp]
            before.update([max(earlier)[1]] if earlier else [])  # (a pid used again by a later run: the latest before)
    return files | before


def _copy_file(path: Path, sink, wanted: set[tuple[str, int]], pages: set[str], kept_ids: set[str], subset: Subset) -> bool:
    """Copy `path`'s kept records; False when the file ends in damage (a crashed run's last record)."""
    try:
        with open(path, "rb") as source, open(path, "rb") as raw:
            records = ArchiveIterator(source)
            for record in records:
                if record.format != "warc":  # warcio reads any bytes as an old ARC record
                    return False
                headers = record.rec_headers
                keep = ((path.name, records.get_record_offset()) in wanted
                        or (headers.get_header(PAGE_HEADER) or headers.get_header(RENDER_HEADER)) in pages
                        or headers.get_header(_POINTER) in kept_ids)
                records.read_to_end(record)
                if not keep or record.rec_type == "request":
                    continue
                kept_ids.add(headers.get_header("WARC-Record-ID"))
                raw.seek(records.get_record_offset())
                sink.write(raw.read(records.get_record_length()))
                subset.copied.add((path.name, records.get_record_offset()))
    except (ArchiveLoadFailed, ValueError, EOFError, zlib.error, AttributeError, TypeError, KeyError):
        return False  # warcio fails in these ways on damaged or crafted bytes
    return True


def _warcinfo(filename: str, software: str):
    writer = WARCWriter(None, gzip=True)
    return writer.create_warcinfo_record(filename, {"software": software, "format": "WARC File Format 1.0",
                                                    "description": "pages exported from a mirror archive"})
