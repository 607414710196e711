"""Page requisites: the stylesheets a captured page uses and what they reference.

A snapshot without its CSS is a column of raw links. After a page is archived,
its stylesheets (`<link rel=stylesheet>`, `@import`), and the fonts and images
they and its `<style>` blocks reference, are captured into the WARC files like
article images (same client, politeness and size limits) and recorded in the
`resources` table. The snapshot view serves them back from the archive with
every CSS reference rewritten by `rewrite_css`, so nothing loads from the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .. import warc
from ..extract.css import MAX_CSS_BYTES, css_references, decode_css, is_css
from ..store import queries

__all__ = ["MAX_REQUISITES", "capture", "captured_css", "css_text"]

MAX_REQUISITES = 60  # per page: a stylesheet maze never holds up the run


async def capture(
    first: list[str],
    fetch_all: Callable[[list[str]], Awaitable[None]],
    stylesheet: Callable[[str], Awaitable[str | None]],
) -> int:
    """Fetch a page's requisites level by level: `first` (its stylesheets, which
    extraction found: `Extraction.stylesheets`), then what they load.

    `fetch_all(urls)` captures URLs; `stylesheet(url)` is the captured CSS text
    of one, or None (read off the event loop: see `css_text`). Returns how many URLs
    were asked for (at most MAX_REQUISITES).
    """
    level = list(first)
    seen = set(level)
    asked = 0
    while level and asked < MAX_REQUISITES:
        level = level[: MAX_REQUISITES - asked]
        await fetch_all(level)
        asked += len(level)
        following = []
        for url in level:
            for found in css_references(await stylesheet(url) or "", url):
                if found not in seen:
                    seen.add(found)
                    following.append(found)
        level = following
    return asked


async def captured_css(folder, db, url: str) -> str | None:
    """The archived stylesheet at `url` as text, or None (not archived, not CSS)."""
    row = queries.latest_resource(db, url)
    return None if row is None else await css_text(folder, queries.warc_location(row), row["content_type"], url)


async def css_text(folder, location: warc.WarcLocation | None, content_type: str | None, url: str) -> str | None:
    """The stylesheet captured at `location` as text, or None (not CSS, or too big to
    follow). Read and decoded in a thread, at most MAX_CSS_BYTES of it: the fetch's event
    loop never decodes a capture."""
    if location is None or not is_css(content_type, url):
        return None
    return await asyncio.to_thread(_css_text, folder, location, content_type)


def _css_text(folder, location: warc.WarcLocation, content_type: str | None) -> str | None:
    try:
        _, body = warc.read_payload(folder, location, limit=MAX_CSS_BYTES)
    except warc.WarcError:  # parsing costs seconds per megabyte: kept, not followed
        return None
    return decode_css(body, content_type)
