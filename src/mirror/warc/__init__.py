"""Raw captures as WARC files (warcio), replayable by pywb.

Each fetch run appends gzip-per-record WARC files under `archive/warc/`,
rotated at a size limit. A record is flushed before the database points at it,
so a kill -9 can at worst leave a truncated last record, which `repair` cuts
off on the next run.

    write  Capture and Derived records appended by a CaptureWriter; the folder's layout
    read   a record's payload read back from its location; the fetcher's responses in a
           file (crash recovery); repair
"""

from __future__ import annotations

from .._types import WarcLocation
from .read import READ_LIMIT, Response, WarcError, original, payload_coding, read_head, read_payload, record_id, repair, responses
from .write import (
    ADDED_HEADER,
    DEFAULT_ROTATE_BYTES,
    PAGE_HEADER,
    RENDER_HEADER,
    WARC_DIR,
    Capture,
    CaptureWriter,
    Derived,
    Original,
    payload_digest,
    software,
)

__all__ = [
    "ADDED_HEADER",
    "software",
    "DEFAULT_ROTATE_BYTES",
    "PAGE_HEADER",
    "READ_LIMIT",
    "RENDER_HEADER",
    "WARC_DIR",
    "Capture",
    "CaptureWriter",
    "Derived",
    "Original",
    "Response",
    "WarcError",
    "WarcLocation",
    "original",
    "payload_coding",
    "payload_digest",
    "read_head",
    "read_payload",
    "record_id",
    "repair",
    "responses",
]
