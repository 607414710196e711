"""A page the user's browser saved, added to the archive (`mirror add`, `mirror serve --uploads`):
written to the WARC files, extracted, indexed and recorded like a fetched page, as added by the
user (`source` added) with where it came from (`provenance`).

What the WARC files get, each record marked with the file it came from (`warc.ADDED_HEADER`) and
the page (`warc.RENDER_HEADER`, so the page's WACZ takes them along), dated when the browser saved
the page where the file says (no request record: no request was made):

- the page as saved, a `response` record for its URL (SingleFile's `data:` URIs inline in it);
- an MHTML file's other parts (images, stylesheets, frames), each a `response` record for its own
  URL, recorded as the page's resources: the reader and the snapshot show them;
- for SingleFile, whose images are `data:` URIs with no address of their own: each image also as
  a `resource` record at `https://inline.mirror.invalid/<sha256>.<ext>` (a name that never
  resolves, RFC 2606), and the page with its images pointing there as a `conversion` record that
  refers to the response. The article is extracted from that copy, so its Markdown shows the
  images from the archive as any other article's do; the response keeps the file's bytes.

The page's URL is what the file (or `--url`) says: a claim, recorded as such.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from .. import warc
from .._types import ADDED_SEED, Exchange, Extraction, PageResult, PageStatus, Source, VersionState, WarcLocation
from ..seeds.documents import links_from_urls
from ..store import Archive
from .read import SavedPage

__all__ = ["INLINE_HOST", "Added", "add_saved"]

INLINE_HOST = "inline.mirror.invalid"
_DATA_IMAGE = re.compile(rb"data:(image/(?:png|jpeg|gif|webp|avif|bmp|svg\+xml));base64,([A-Za-z0-9+/=\s]+)(?=[\"')\s])")
_SMALLEST = 256  # bytes: smaller inline images are spacers and placeholders, never an article's picture
_EXTENSIONS = {"image/svg+xml": "svg", "image/jpeg": "jpg"}

Extract = Callable[[WarcLocation, str], Extraction]


@dataclass
class Added:
    """What became of one saved page: its URL, its reader page's id, its status, and why not (`note`)."""

    url: str
    id: int | None
    status: str
    title: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"url": self.url, "id": self.id, "status": self.status, "title": self.title, "note": self.note}


def add_saved(archive: Archive, page: SavedPage, extract: Extract, via: str) -> Added:
    """Write `page` to the archive's WARC files, extract it (`extract`) and record it; `via` says
    how it came (`mirror add`, an upload). The caller holds the archive's lock."""
    writer = warc.CaptureWriter(archive.path)
    try:
        location, resources = _write(writer, page)
    finally:
        writer.close()
        archive.mark_warcs_closed([f for f in writer.opened if f not in writer.unfinished])
    extraction = extract(location, page.url)
    archive.record_inventory(links_from_urls([page.url], seed=ADDED_SEED))
    had_capture = archive.db.execute("select warc_file is not null from pages where url = ?", [page.url]).fetchone()[0] == 1
    final = Exchange(url=page.url, final_url=page.url, status=200, content_type=page.content_type, location=location, started_at=0.0)
    result = PageResult(url=page.url, final=final, attempts=[], source=Source.ADDED)
    provenance = {**page.provenance(), "added_via": via}
    status = archive.record_added(result, extraction, json.dumps(provenance, ensure_ascii=False), resources, page.saved_at, had_capture=had_capture)
    row = archive.db.execute("select id, status, title, error_message from pages where url = ?", [page.url]).fetchone()
    note = None
    if result.version == VersionState.SAME:
        note = "the same article as the copy saved before, which is kept"
    elif result.version not in (VersionState.FIRST, VersionState.CHANGED, VersionState.MOVED):
        note = f"the copy saved before is kept: {row[3] or 'this file has no article in it'}"
    elif extraction.status != PageStatus.ARCHIVED:
        note = extraction.note or "no article text found in this file"
    return Added(page.url, row[0], str(status or row[1]), row[2], note)


def _write(writer: warc.CaptureWriter, page: SavedPage) -> tuple[WarcLocation, list[Exchange]]:
    """The page's records, written and flushed in one go; where its article is read from, and its resources."""
    marks = {warc.ADDED_HEADER: page.file_name, warc.RENDER_HEADER: page.url}
    items: list[warc.Capture | warc.Derived] = [_response(page.url, page.content_type, page.document, marks, page.saved_at)]
    resources: list[tuple[str, str]] = []  # (url, content type) of each item after the first, in order
    for part in page.parts:
        items.append(_response(part.url, part.content_type, part.body, marks, page.saved_at))
        resources.append((part.url, part.content_type))
    images, document = _inline_images(page.document) if page.kind == "singlefile" else ({}, page.document)
    for url, (content_type, body) in images.items():
        items.append(warc.Derived(url, content_type, body, "resource", extra_warc_headers=marks))
        resources.append((url, content_type))
    if images:  # the page with its images at their archived addresses: what the article is read from
        items.append(warc.Derived(page.url, page.content_type, document, "conversion", extra_warc_headers=marks))
    located = writer.write_many(items)
    exchanges = [
        Exchange(url=url, final_url=url, status=200, content_type=content_type, location=where)
        for (url, content_type), where in zip(resources, located[1:], strict=False)
    ]
    return (located[-1] if images else located[0]), exchanges


def _response(url: str, content_type: str, body: bytes, marks: dict[str, str], saved_at: str | None) -> warc.Capture:
    return warc.Capture(
        url=url,
        method="GET",
        request_headers=[],
        status=200,
        reason="OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", content_type)],
        body=io.BytesIO(body),
        extra_warc_headers=dict(marks),
        with_request=False,
        date=saved_at.replace("+00:00", "Z") if saved_at else None,
    )


def _inline_images(document: bytes) -> tuple[dict[str, tuple[str, bytes]], bytes]:
    """SingleFile's inline images: each (past a placeholder's size) at its `INLINE_HOST` address,
    and the document with its `data:` URIs pointing there."""
    images: dict[str, tuple[str, bytes]] = {}

    def swap(match: re.Match) -> bytes:
        try:
            body = base64.b64decode(re.sub(rb"\s+", b"", match[2]), validate=True)
        except (binascii.Error, ValueError):
            return match[0]
        if len(body) < _SMALLEST:
            return match[0]
        content_type = match[1].decode("ascii")
        extension = _EXTENSIONS.get(content_type, content_type.split("/")[1])
        url = f"https://{INLINE_HOST}/{hashlib.sha256(body).hexdigest()}.{extension}"
        images[url] = (content_type, body)
        return url.encode("ascii")

    rewritten = _DATA_IMAGE.sub(swap, document)
    return images, rewritten
