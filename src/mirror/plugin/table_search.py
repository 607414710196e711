"""The pages table searched with `_search` and no `_sort`: ranked by relevance.

datasette's table view can only sort by a column, so a table search lists its
matches by URL, and at 100,000 articles it sorts and facets every match in
seconds. Here, `/<db>/pages?_search=…` and `/<db>/pages.json?_search=…` without
`_sort` are answered by bm25 (the ranking of `mirror search`), top rows only,
with the count and facets from one pass over a covering index. Anything we do
not handle exactly (other filters, `_sort`, other formats) goes to datasette.
"""

from __future__ import annotations

import json
from collections import Counter
from urllib.parse import parse_qsl, urlencode

from datasette import Response
from datasette.utils.asgi import Request

from ..search import FTS_TABLE, WEIGHTS, build_match, ranking_floor
from ..search import query as _search
from ..store import FACETS_INDEX
from ._common import reader_csp
from ._permissions import can_read_archive

TABLE = "pages"
FACETS = ("host", "status", "seeds", "sections", "language")  # as configured on the table
ARRAY_FACETS = {"seeds", "sections"}
FACET_SIZE = 30
SHOWN = ("title", "sitename", "date", "status", "language", "host", "url")  # the HTML table's columns
MAX_OFFSET = 2**62  # beyond any table; larger numbers do not fit SQLite's integers
# Matches counted at most (past RANKED_AT_MOST): a word in most of a million articles took 0.5 s
# to count exactly; past this the count is null in JSON ("more than" on the page), as datasette's
# own count is when it would take too long.
COUNTED_AT_MOST = 100_000
PASSIVE = {"_search", "_size", "_next", "_shape", "_col", "_nocol", "_extra", "_facet", "_labels", "_json", "_nofacet", "_nocount"}


def ranked_table_search(datasette, app):
    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "GET":
            response = await _maybe_answer(datasette, scope)
            if response is not None:
                await response.asgi_send(send)
                return
        await app(scope, receive, send)

    return wrapped


async def _maybe_answer(datasette, scope) -> Response | None:
    path = scope.get("path", "")
    base = datasette.setting("base_url") or "/"
    if not path.startswith(base):
        return None
    parts = path[len(base) :].split("/")
    if len(parts) != 2 or parts[1] not in (TABLE, TABLE + ".json"):
        return None
    db = datasette.databases.get(parts[0])
    args = parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace"), keep_blank_values=True)
    # datasette's table form always sends `_sort=<primary key>` (its default order): not a choice
    args = [(k, v) for k, v in args if not (k == "_sort" and v in ("", "url")) and k != "_sort_by_desc"]
    keys = {k for k, _ in args}
    if db is None or "_search" not in keys or keys & {"_sort", "_sort_desc", "_where", "_through"}:
        return None
    filters = _filters(args)
    if filters is None or not await db.table_exists(FTS_TABLE):
        return None
    if not await can_read_archive(datasette, await _actor(datasette, scope), parts[0]):
        return None  # datasette's table view answers with its 403
    request = _Args(args)
    query = request.get("_search") or ""
    most = datasette.setting("max_returned_rows")
    try:
        size = request.get("_size") or datasette.setting("default_page_size")
        size = most if size == "max" else min(max(int(size), 1), most)  # 0 would page forever
        offset = min(max(int(request.get("_next") or 0), 0), MAX_OFFSET)
    except ValueError:
        return Response.text("_size must be a number or max, _next a number", status=400)
    columns = await db.table_columns(TABLE)
    result = await db.execute_fn(lambda conn: _run(conn, query, filters, size, offset, columns))
    url = lambda **changes: _url(datasette, parts[0], parts[1], args, changes)  # noqa: E731
    nxt = str(offset + len(result["rows"])) if result["more"] else None  # (a page ends where the ranked matches do)
    if parts[1].endswith(".json"):
        headers = dict(scope.get("headers") or [])
        origin = f"{scope.get('scheme', 'http')}://{headers.get(b'host', b'localhost').decode('latin-1')}"
        return Response.json(_json(origin, parts[0], request, result, columns, nxt, url))
    context = {
        "database": parts[0],
        "query": query,
        "filters": filters,
        "rows": [_display(datasette, row) for row in result["rows"]],
        "count": result["count"],
        "counted_at_most": COUNTED_AT_MOST,
        "facets_of_newest": result["facets_of_newest"],
        "offset": offset,
        "facets": _facet_results(result["facets"], filters, url),
        "next_url": url(_next=nxt) if nxt else None,
        "unranked_url": url(_sort="title", _next=None),
        "json_url": _url(datasette, parts[0], TABLE + ".json", args, {}),
        "hidden": [(k, v) for k, v in args if k not in ("_search", "_next")],
    }
    await datasette.invoke_startup()  # (once: this wrapper answers before datasette's router, which would)
    html = await datasette.render_template("mirror_table_search.html", context, request=Request({**scope, "csrftoken": lambda: ""}, None))
    return Response.html(html, headers={"Content-Security-Policy": reader_csp()})


class _Args:
    def __init__(self, pairs):
        self.pairs = pairs

    def get(self, key, default=None):
        return next((v for k, v in self.pairs if k == key), default)

    def getlist(self, key):
        return [v for k, v in self.pairs if k == key]


def _filters(args) -> list[tuple[str, str]] | None:
    """Column filters we can apply: `col=v`, `col__exact=v`, `col__arraycontains=v`; None if others."""
    filters = []
    for key, value in args:
        if key.startswith("_"):
            if key not in PASSIVE:
                return None
            continue
        column, _, op = key.partition("__")
        if column not in FACETS or op not in ("", "exact", "arraycontains") or (op == "arraycontains") != (column in ARRAY_FACETS):
            return None
        filters.append((column, value))
    return filters


def _run(conn, query: str, filters, size: int, offset: int, columns: list[str]) -> dict:
    match = build_match(query)
    if match is None:
        return {"rows": [], "count": 0, "facets": {f: Counter() for f in FACETS}, "facets_of_newest": None, "more": False}
    where, params = [f"{FTS_TABLE} match ?"], [match]
    for column, value in filters:
        if column in ARRAY_FACETS:
            where.append(f"exists (select 1 from json_each(pages.{column}) where value = ?)")
        else:
            where.append(f"pages.{column} = ?")
        params.append(value)
    sql_where = " and ".join(where)
    weights = ", ".join(str(w) for w in WEIGHTS)
    # pages' short columns from the covering index alone (archives written by mirror have it)
    covering = conn.execute("select 1 from sqlite_master where type = 'index' and name = ?", [FACETS_INDEX]).fetchone()
    pages = f"pages indexed by {FACETS_INDEX}" if covering else "pages"
    # Count and facets in one pass over the matches' short columns (a covering index),
    # grouped by SQLite: Python sees each distinct combination once. Past RANKED_AT_MOST matches
    # (no filter), the facets are those of the newest RANKED_AT_MOST, the ones ranked, and the
    # count is read from the index alone: every match through the pages cost 200 ms at 100,000.
    newest = None if filters else ranking_floor(conn, match)
    facets = {f: Counter() for f in FACETS}
    count = 0
    columns_sql = ", ".join("pages." + f for f in FACETS)
    for *values, n in conn.execute(
        f"select {columns_sql}, count(*) from {FTS_TABLE} join {pages} on pages.id = {FTS_TABLE}.rowid "
        f"where {sql_where}{f' and {FTS_TABLE}.rowid >= {int(newest)}' if newest is not None else ''} group by {columns_sql}",
        params,
    ):
        count += n
        for facet, value in zip(FACETS, values):
            if facet in ARRAY_FACETS:
                for item in _json_list(value):
                    facets[facet][item] += n
            else:
                facets[facet][value] += n
    if newest is not None:  # every match counted, up to COUNTED_AT_MOST: past it, "more than"
        count = conn.execute(f"select count(*) from (select rowid from {FTS_TABLE} where {FTS_TABLE} match ? limit {COUNTED_AT_MOST + 1})",
                             [match]).fetchone()[0]
    select = ", ".join(f"pages.[{c}]" for c in columns)
    # as `mirror search`: a word in most articles ranks the newest RANKED_AT_MOST first; the pages
    # after those go on with the older matches, ranked among themselves: every match once, in order
    ranked_where, skip = sql_where, offset
    if newest is not None:
        most = _search.RANKED_AT_MOST
        ranked_where += f" and {FTS_TABLE}.rowid {'>=' if offset < most else '<'} {int(newest)}"
        skip = offset if offset < most else offset - most
    rows = conn.execute(
        f"""with ranked as (
                select {FTS_TABLE}.rowid as id, bm25({FTS_TABLE}, {weights}) as rank
                from {FTS_TABLE} {f"join {pages} on pages.id = {FTS_TABLE}.rowid" if filters else ""}
                where {ranked_where} order by rank limit ? offset ?)
            select {select} from ranked join pages on pages.id = ranked.id order by ranked.rank""",
        [*params, size + 1, skip],
    ).fetchall()
    if newest is not None and offset < _search.RANKED_AT_MOST:
        rows = rows[:max(0, _search.RANKED_AT_MOST - offset)]  # this page ends where the newest do
    return {
        "rows": [{c: _value(v) for c, v in zip(columns, r)} for r in rows[:size]],
        "count": count if newest is None or count <= COUNTED_AT_MOST else None,  # (a count walked whole is exact)
        "facets": facets,
        "facets_of_newest": _search.RANKED_AT_MOST if newest is not None else None,
        # past the newest (ranked) matches come the older ones: there are some, as there were more than those
        "more": (newest is not None and offset < _search.RANKED_AT_MOST) or len(rows) > size,
    }


def _value(value: object) -> object:
    """A cell as datasette's JSON gives it: binary (the compressed Markdown) as base64."""
    if isinstance(value, bytes):
        import base64

        return {"$base64": True, "encoded": base64.b64encode(value).decode("ascii")}
    return value


def _url(datasette, database: str, resource: str, args, changes: dict) -> str:
    kept = [(k, v) for k, v in args if k not in changes]
    kept += [(k, v) for k, v in changes.items() if v is not None]
    return datasette.urls.path(f"/{database}/{resource}") + ("?" + urlencode(kept) if kept else "")


def _facet_results(facets: dict[str, Counter], filters, url) -> dict:
    results = {}
    selected = set(filters)
    for facet in FACETS:
        key = facet + ("__arraycontains" if facet in ARRAY_FACETS else "")
        values = []
        for value, count in facets[facet].most_common(FACET_SIZE):
            is_selected = (facet, str(value)) in selected
            values.append(
                {
                    "value": value,
                    "label": value,
                    "count": count,
                    "toggle_url": url(**{key: None}) if is_selected else url(**{key: "" if value is None else value, "_next": None}),
                    "selected": is_selected,
                }
            )
        results[facet] = {
            "name": facet,
            "type": "array" if facet in ARRAY_FACETS else "column",
            "results": values,
            "truncated": len(facets[facet]) > FACET_SIZE,
        }
    return results


def _json(origin: str, database: str, request: _Args, result: dict, columns: list[str], nxt: str | None, url) -> object:
    keep = request.getlist("_col")
    if keep:
        columns = [c for c in columns if c in keep or c == "url"]  # the primary key always comes along
    drop = set(request.getlist("_nocol"))
    columns = [c for c in columns if c not in drop]
    rows = [{c: row[c] for c in columns} for row in result["rows"]]
    shape = request.get("_shape") or ("arrays" if _is_v0() else "objects")
    if shape == "array":
        return rows
    facet_results = _facet_results(result["facets"], [], url)
    next_url = origin + url(_next=nxt) if nxt else None
    body = {
        "ok": True,
        "database": database,
        "table": TABLE,
        "ranked": "bm25",
        "columns": columns,
        "rows": [list(r.values()) for r in rows] if shape == "arrays" else rows,
        "next": nxt,
        "next_url": next_url,
        "filtered_table_rows_count": result["count"],
        "count": result["count"],
        "truncated": False,
    }
    if result["facets_of_newest"]:  # (ours: the facets count the newest matches only, the ones ranked)
        body["facets_of_newest"] = result["facets_of_newest"]
    body["facet_results"] = facet_results if _is_v0() else {"results": facet_results, "timed_out": []}
    return body


def _is_v0() -> bool:
    from datasette.version import __version__

    return __version__.startswith("0.")


def _display(datasette, row: dict) -> dict:
    return {**{c: row.get(c) for c in SHOWN}, "reader": datasette.urls.path(f"/-/mirror/page/{row['id']}")}


async def _actor(datasette, scope) -> dict | None:
    """The actor datasette will see for this request: its router resolves it after
    this wrapper has run, so ask the same `actor_from_request` hooks."""
    from datasette.plugins import pm
    from datasette.utils import await_me_maybe

    request = Request(scope, None)
    for actor in pm.hook.actor_from_request(datasette=datasette, request=request):
        actor = await await_me_maybe(actor)
        if actor:
            return actor
    return scope.get("actor") or None


def _json_list(value: str | None) -> list:
    """A JSON array column as written by mirror; anything else (a hand-edited row) is empty."""
    try:
        items = json.loads(value or "[]")
    except ValueError:
        return []
    return [item for item in items if isinstance(item, str)] if isinstance(items, list) else []
