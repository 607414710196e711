"""Screenshots of rendered pages, served from the WARC files.

`/-/mirror/screenshot/<id>` is the first screen (`?full=1`: the page, as tall
as it was kept). Reader view, search results and the reading home show them.
"""

from __future__ import annotations

from datasette import Response

from ._common import _archive, _Missing, _page_id, _payload, _views

HEADERS = {"Content-Security-Policy": "sandbox; default-src 'none'", "X-Content-Type-Options": "nosniff", "Cache-Control": "max-age=86400"}


@_views
async def screenshot_view(datasette, request):
    db = await _archive(datasette, request)
    full = request.args.get("full") == "1"
    row = (
        await db.execute(
            "select screenshot_warc_file as file, screenshot_warc_offset as first, screenshot_warc_length as first_length, "
            "full_screenshot_warc_offset as full, full_screenshot_warc_length as full_length from pages where id = ?",
            [_page_id(request)],
        )
    ).first()
    if row is None or not row["file"]:
        raise _Missing("no screenshot of this page")
    offset, length = (row["full"], row["full_length"]) if full and row["full"] is not None else (row["first"], row["first_length"])
    _, body = await _payload(db, {"warc_file": row["file"], "warc_offset": offset, "warc_length": length})
    if not body.startswith(b"\x89PNG"):
        raise _Missing("no screenshot of this page")
    return Response(body, content_type="image/png", headers=HEADERS)


def screenshot_url(datasette, page_id: int) -> str:
    """Our own route: the only source a thumbnail ever has."""
    return datasette.urls.path(f"/-/mirror/screenshot/{int(page_id)}")


async def screenshot_urls(datasette, db, ids: list[int]) -> dict[int, str]:
    """page id -> its screenshot's URL, for those of these pages that have one."""
    return {page_id: screenshot_url(datasette, page_id) for page_id in await with_screenshots(db, ids)}


async def with_screenshots(db, ids: list[int]) -> set[int]:
    """Which of these pages have a screenshot (archives from before screenshots have no such column)."""
    if not ids or "screenshot_warc_file" not in await db.table_columns("pages"):
        return set()
    marks = ", ".join("?" for _ in ids)
    rows = await db.execute(f"select id from pages where screenshot_warc_file is not null and id in ({marks})", ids)
    return {row["id"] for row in rows}
