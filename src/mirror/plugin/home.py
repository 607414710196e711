"""The reading home at `/`: the seeds as written, seed → section → links, with each
link's title, site, status, reader view and screenshot thumbnail; counts, the pages
no reading list links any more, and the latest archived articles as a grid of cards.

Paged by link occurrence (the links table's primary key order), so a page costs
the same at 100 or 100,000 links. datasette's table list is one click away.
"""

from __future__ import annotations

import os
from urllib.parse import urlencode

from datasette import Response
from datasette.database import QueryInterrupted

from .._enums import PageStatus
from ..urls import web_url
from ._common import _archive, _views, reader_csp
from .screenshots import screenshot_urls

PER_PAGE = 200
RECENT = 12  # the grid's cards: full rows at 2, 3, 4 and 6 columns
STATUSES = (PageStatus.ARCHIVED, PageStatus.DUPLICATE, PageStatus.NO_TEXT, PageStatus.FAILED, PageStatus.PENDING, PageStatus.SKIPPED)  # reading order


@_views
async def home_view(datasette, request):
    db = await _archive(datasette, request)
    seed = request.args.get("seed") or None
    try:
        page = min(max(1, int(request.args.get("page", "1"))), 2**40)  # larger does not fit SQLite
    except ValueError:
        page = 1
    state = _file_state(db.path) if db.path else None  # (read once: both counts are kept under it)
    counts = await _until_written(db, state, "counts", lambda: _status_counts(db))
    seeds = [dict(r) for r in await db.execute("select seed, links, read_at from seeds order by seed")]
    where, params = ("where links.seed = ?", [seed]) if seed else ("", [])
    total = await _until_written(db, state, f"links of {seed}", lambda: _single(db, f"select count(*) from links {where}", params))
    columns = set(await db.table_columns("pages"))
    # a duplicate's original (archives from before duplicates have no same_as)
    original, original_join = (
        ("originals.id as original_id, originals.title as original_title", "left join pages as originals on originals.url = pages.same_as")
        if "same_as" in columns
        else ("null as original_id, null as original_title", "")
    )
    rows = await db.execute(
        f"""select links.seed, links.line, links.section, links.title as link_title, links.url_as_written,
                   pages.id, pages.url, pages.title, pages.sitename, pages.host, pages.status, pages.error,
                   pages.error_message, pages.fetched_at, pages.date, {original}
            from links left join pages on pages.url = links.url {original_join}
            {where} order by links.seed, links.line, links.col limit ? offset ?""",
        [*params, PER_PAGE, (page - 1) * PER_PAGE],
    )
    recent = await db.execute(
        "select id, title, url, sitename, host, fetched_at from pages where status = 'archived' order by fetched_at desc limit ?",
        [RECENT],
    )
    rows, recent = [dict(r) for r in rows], [dict(r) for r in recent]
    shots = await screenshot_urls(datasette, db, list({r["id"] for r in rows + recent if r["id"] is not None}))
    for row in rows + recent:
        row["screenshot"] = shots.get(row["id"])
    pages_count = -(-total // PER_PAGE) if total else 1

    def page_url(number: int) -> str:
        args = {"seed": seed} if seed else {}
        if number > 1:
            args["page"] = number
        return datasette.urls.path("/") + ("?" + urlencode(args) if args else "")

    context = {
        "title": "mirror: your reading lists, archived",
        "db_name": db.name,
        "counts": [(status, counts.get(status, 0)) for status in STATUSES if counts.get(status) or status != PageStatus.DUPLICATE],
        "unlinked": await _unlinked(db, columns),
        # (links' largest rowid, read at once: never fewer than the links there are)
        "health": await _health(db) if ((await db.execute("select max(rowid) from links")).single_value() or 0) <= HEALTH_PANEL_MAX else None,
        "unlinked_url": datasette.urls.table(db.name, "pages") + "?" + urlencode({"status": PageStatus.PENDING.value, "seeds": "[]"}),
        "total_pages": sum(counts.values()),
        "seeds": seeds,
        "seed": seed,
        "grouped": _group(datasette, rows),
        "recent": [_entry(datasette, r) for r in recent],
        "page": page,
        "pages_count": pages_count,
        "links_total": total,
        "prev_url": page_url(page - 1) if page > 1 else None,
        "next_url": page_url(page + 1) if page < pages_count else None,
        "seed_url": lambda name: datasette.urls.path("/") + "?" + urlencode({"seed": name}),
    }
    return Response.html(
        await datasette.render_template("mirror_home.html", context, request=request), headers={"Content-Security-Policy": reader_csp()}
    )


# Counts that walk every page or link (131 ms and 34 ms at a million), kept until the archive is
# written: the file's state (the database's and its write-ahead log's size and time) is the key.
_KEPT: dict[tuple, object] = {}


async def _until_written(db, state: tuple | None, what: str, compute):
    if state is None:
        return await compute()
    key = (db.path, state, what)
    if key not in _KEPT:
        if len(_KEPT) >= 64:
            _KEPT.clear()
        _KEPT[key] = await compute()
    return _KEPT[key]


def _file_state(path: str) -> tuple | None:
    try:
        main = os.stat(path)
    except OSError:
        return None
    try:  # a commit grows the log, or rewrites it from its start with new salts in its header
        with open(path + "-wal", "rb") as log:
            wal: tuple = (os.fstat(log.fileno()).st_size, log.read(32))
    except OSError:
        wal = ()
    return (main.st_mtime_ns, main.st_size, main.st_ino, *wal)


async def _status_counts(db) -> dict:
    return {row["status"]: row["n"] for row in await db.execute("select status, count(*) as n from pages group by status")}


async def _single(db, sql: str, params: list):
    return (await db.execute(sql, params)).single_value()


async def _unlinked(db, columns: set[str]) -> int | None:
    """How many pending pages no row of `links` links any more: `mirror fetch` leaves them.

    The candidates are read from the facets index (`seeds` is `[]` once a page's last
    link is gone, null on an archive older than that column), each checked against the
    links as fetch checks it: at a million pending pages checking them all took seconds.
    None when even that takes longer than datasette allows a query."""
    candidates = "and (seeds = '[]' or seeds is null) " if "seeds" in columns else ""
    try:
        result = await db.execute(
            f"select count(*) from pages where status = ? {candidates}and not exists (select 1 from links where links.url = pages.url)",
            [PageStatus.PENDING.value],
        )
    except QueryInterrupted:
        return None
    return result.single_value()


# past this many links, the panel (a pass over every link: 0.8 s at 100,000) is left to its own table,
# /mirror/link_health, linked from the page: the home stays fast however large the archive
HEALTH_PANEL_MAX = 20_000
HEALTH_ORDER = ("alive", "changed", "moved", "gone", "soft_404", "blocked", "failed", "wayback only", "not fetched yet", "not a web page")


async def _health(db) -> list[dict]:
    """Per reading list: its links by health, and since when the oldest of each has been so
    (an archive from before versions has no `link_health` view: nothing)."""
    if "link_health" not in await db.view_names():
        return []
    try:
        rows = await db.execute("select reading_list, health, links, since from link_health order by reading_list")
    except QueryInterrupted:  # longer than datasette allows a query: the home shows without it
        return []
    lists: dict[str, dict] = {}
    for row in rows:
        lists.setdefault(row["reading_list"], {"reading_list": row["reading_list"], "states": {}})["states"][row["health"]] = (
            row["links"],
            row["since"],
        )
    for entry in lists.values():
        entry["states"] = [(state, *entry["states"][state]) for state in HEALTH_ORDER if state in entry["states"]]
    return list(lists.values())


def _entry(datasette, row: dict) -> dict:
    reader = lambda page_id: datasette.urls.path(f"/-/mirror/page/{page_id}") if page_id is not None else None  # noqa: E731
    site = row.get("sitename") or row.get("host") or ""
    return {
        **row,
        "reader": reader(row.get("id")),
        "original_reader": reader(row.get("original_id")),
        "href": web_url(row["url"]),  # only http(s) becomes a link
        "site": site,
        "initial": site[:1].upper() or "?",  # a card without a screenshot shows its site's initial
    }


def _group(datasette, rows) -> list[dict]:
    """Rows in seed, line order as [{seed, sections: [{section, links}]}]."""
    grouped: list[dict] = []
    for row in rows:
        row = _entry(datasette, dict(row))
        if not grouped or grouped[-1]["seed"] != row["seed"]:
            grouped.append({"seed": row["seed"], "sections": []})
        sections = grouped[-1]["sections"]
        if not sections or sections[-1]["section"] != row["section"]:
            sections.append({"section": row["section"], "links": []})
        sections[-1]["links"].append(row)
    return grouped
