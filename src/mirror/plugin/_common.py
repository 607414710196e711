"""What every view of the plugin shares: finding the archive, reading a capture, error pages."""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import sqlite_utils
from datasette import Response

from .._util.text import readable_date
from ..store import queries
from ..warc import WarcError, read_payload
from ._permissions import can_read_archive

# Our own pages: scripts only from files datasette serves, never inline.
READER_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'{known}; object-src 'none'; base-uri 'none'"
)


@functools.cache
def reader_csp() -> str:
    """READER_CSP, allowing by its hash the one inline line datasette 1.0's base.html
    writes (`window.datasetteVersion = '…';`) and nothing else inline."""
    from datasette.version import __version__

    line = f"window.datasetteVersion = '{__version__}';"
    digest = base64.b64encode(hashlib.sha256(line.encode()).digest()).decode()
    return READER_CSP.format(known=f" 'sha256-{digest}'")


_WAYBACK_TIMESTAMP = re.compile(r"(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)")


def _iso(value) -> str | None:
    """`value` as an ISO date or timestamp, if it is one (a Wayback timestamp,
    `20240305120000`, is one in UTC); else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    wayback = _WAYBACK_TIMESTAMP.fullmatch(text)
    if wayback:
        text = "{}-{}-{}T{}:{}:{}+00:00".format(*wayback.groups())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.date().isoformat() if len(text) <= 10 else moment.isoformat()


def date_text(value) -> str:
    """The `mirror_date` filter: a stored date or timestamp as people read it
    (`2024-03-05`, `2026-11-25 13:05 UTC`); a site's own date text as it is."""
    if value is None:
        return ""
    return readable_date(_iso(value) or str(value))


def date_attribute(value) -> str:
    """The `mirror_datetime` filter: the machine-readable value for `<time datetime>`, or ""."""
    return _iso(value) or ""


class _Missing(Exception):
    """Answered as a plain 404 page (raising datasette's NotFound logs a traceback)."""


class _BadRequest(Exception):
    """Answered as a 400 page saying what to change."""


class _Forbidden(Exception):
    """Answered as a 403 page: datasette's permissions say no."""


def _views(view):
    async def wrapped(datasette, request):
        try:
            return await view(datasette, request)
        except _Missing as exc:
            return await _error_page(datasette, request, str(exc), "Not found", 404)
        except _BadRequest as exc:
            return await _error_page(datasette, request, str(exc), "Bad request", 400)
        except _Forbidden as exc:
            return await _error_page(datasette, request, str(exc), "Forbidden", 403)

    wrapped.__name__ = view.__name__
    return wrapped


async def _error_page(datasette, request, message: str, title: str, status: int) -> Response:
    if request.args.get("_format") == "json":
        return Response.json({"ok": False, "error": message, "status": status}, status=status)
    context = {"ok": False, "error": message, "title": title, "status": status}
    return Response.html(await datasette.render_template("error.html", context, request=request), status=status)


def _page_id(request) -> int:
    """The page id in the URL; anything but a plausible rowid is a missing page."""
    text = request.url_vars["id"]
    if not re.fullmatch(r"\d{1,18}", text):
        raise _Missing("no such page in this archive")
    return int(text)


async def archive_name(datasette) -> str | None:
    """The mirror database's name: `mirror`, or the first with a pages table."""
    for name, db in datasette.databases.items():
        if name != "_internal" and db.path is not None and (name == "mirror" or await db.table_exists("pages")):
            return name
    return None


async def _archive(datasette, request):
    """The mirror database (`archive_name`), if the actor may read it (datasette's permissions)."""
    name = await archive_name(datasette)
    if name is None:
        raise _Missing("no mirror archive is attached to this datasette")
    if not await can_read_archive(datasette, request.actor, name):
        raise _Forbidden("you may not read this archive")
    return datasette.databases[name]


def _folder(db) -> Path:
    return Path(db.path).parent


async def _payload(db, row):
    """The capture a row points at; a damaged or out-of-archive location, or one that
    decodes past `warc.READ_LIMIT`, is a missing capture. Read and decoded in a thread:
    never on the event loop that serves everyone."""
    try:
        return await asyncio.to_thread(read_payload, _folder(db), queries.warc_location(row))
    except WarcError as exc:
        raise _Missing(f"the saved copy cannot be read: {exc}") from None


class RequestedPage(NamedTuple):
    db: Any  # datasette's Database of the archive
    page_id: int
    page: dict[str, Any]  # its row


async def _requested_page(datasette, request) -> RequestedPage:
    """The archive, and the page whose id the URL names (a missing one is a 404)."""
    db = await _archive(datasette, request)
    page_id = _page_id(request)
    page = await _read(db, queries.page_by_id, page_id)
    if page is None:
        raise _Missing(f"no page {page_id} in this archive")
    return RequestedPage(db, page_id, page)


async def _read(db, query, *args):
    """One of `mirror.store.queries` on datasette's connection to the archive."""
    return await db.execute_fn(lambda conn: query(sqlite_utils.Database(conn), *args))
