"""The datasette plugin: our metadata, Chinese-aware table search, reader and snapshot views.

Registered as a datasette entry point, so `datasette archive/mirror.db` and
`mirror serve` behave the same. One plugin for both datasette lines: 0.65.x
reads our metadata through `get_metadata`; 1.0 (which dropped that hook in
1.0a14) gets the same settings from the `startup` hook: metadata into its
metadata tables, table options into its configuration, canned queries through
`add_query()`. Either way a user's own metadata or datasette.yaml wins.
"""

from __future__ import annotations

import copy
import sqlite3
from typing import Any
from urllib.parse import parse_qsl, urlencode

from datasette import Response, hookimpl
from markupsafe import Markup, escape

from .._util.text import count
from ..search import FTS_TABLE, build_match
from ._common import archive_name, date_attribute, date_text
from ._origin import guard, validate_settings
from .home import home_view
from .screenshots import screenshot_view
from .versions import compare_view
from .views import reader_view, resource_view, search_view, snapshot_view, version_snapshot_view

NEVER = '"\ue001"'  # a token no text contains: an empty query matches nothing


@hookimpl(trylast=True)
def prepare_connection(conn: sqlite3.Connection) -> None:
    """Make datasette's own `_search` use our query rewriting on the archive.

    datasette searches with `match escape_fts(:search)`; registered last, our
    escape_fts wins on databases that have our index, so the table's search
    box and the JSON API give exactly `mirror search`'s results.
    """
    try:
        has_index = conn.execute("select 1 from sqlite_master where name = ?", [FTS_TABLE]).fetchone()
    except sqlite3.Error:
        return
    if has_index:
        conn.create_function("escape_fts", 1, lambda query: build_match(query or "") or NEVER)


@hookimpl
def get_metadata(datasette, key, database, table):
    """datasette 0.65: our metadata; datasette merges the user's own on top, into the
    dict we return, so each call gets a copy (else one instance's `allow` leaks into all)."""
    return copy.deepcopy(METADATA)


@hookimpl
def startup(datasette):
    """datasette 1.0: the same settings, through the APIs that replaced get_metadata."""
    validate_settings(datasette)
    if not hasattr(datasette, "set_instance_metadata"):
        return None  # 0.65 reads get_metadata

    async def apply() -> None:
        # before 1.0a3x startup hooks ran before the metadata tables (and the user's metadata) were made
        await datasette.refresh_schemas()
        instance = await datasette.get_instance_metadata()
        for key, value in METADATA.items():
            if key != "databases" and key not in instance:
                await datasette.set_instance_metadata(key, value)
        for name in await _archive_databases(datasette):
            await _apply_database(datasette, name, METADATA["databases"]["mirror"])

    return apply


TABLE_CONFIG_KEYS = {"fts_table", "fts_pk", "facets", "hidden", "label_column", "sort", "sort_desc", "size"}


async def _archive_databases(datasette) -> list[str]:
    """The attached databases that hold a mirror archive (our search index)."""
    names = []
    for name, db in datasette.databases.items():
        if name != "_internal" and await db.table_exists(FTS_TABLE):
            names.append(name)
    return names


async def _apply_database(datasette, name: str, ours: dict) -> None:
    existing = await datasette.get_database_metadata(name)
    for key in ("title", "description", "description_html"):
        if key in ours and key not in existing:
            await datasette.set_database_metadata(name, key, ours[key])
    if datasette.config is None:
        datasette.config = {}
    configured = datasette.config.setdefault("databases", {}).setdefault(name, {}).setdefault("tables", {})
    for table, options in ours["tables"].items():
        existing = await datasette.get_resource_metadata(name, table)
        for key in ("title", "description"):
            if key in options and key not in existing:
                await datasette.set_resource_metadata(name, table, key, options[key])
        config = {k: v for k, v in options.items() if k in TABLE_CONFIG_KEYS}
        configured[table] = {**config, **(configured.get(table) or {})}  # the user's options win
    if hasattr(datasette, "add_query"):  # 1.0a31+: stored queries
        for query, spec in ours["queries"].items():
            if await datasette.get_query(name, query) is None:
                await datasette.add_query(name, query, spec["sql"], title=spec["title"], description=spec["description"])


@hookimpl
def canned_queries(datasette, database):
    """datasette 1.0a14 to 1.0a30: no get_metadata, no add_query yet, but this hook."""
    if hasattr(datasette, "set_instance_metadata") and not hasattr(datasette, "add_query") and database == "mirror":
        return METADATA["databases"]["mirror"]["queries"]
    return None


@hookimpl
def prepare_jinja2_environment(env):
    """Dates as people read them in our templates: `{{ value|mirror_date }}`, and the
    machine-readable value for `<time datetime="{{ value|mirror_datetime }}">`; counts as
    `{{ n|mirror_count("page") }}` (`1 page`, `1,200 pages`)."""
    env.filters["mirror_date"] = date_text
    env.filters["mirror_datetime"] = date_attribute
    env.filters["mirror_count"] = lambda n, word, words=None: count(n, word, words, thousands=True)


@hookimpl
def asgi_wrapper(datasette):
    """Outside: only this machine's own pages may ask (DNS rebinding, cross-origin probes).
    Inside: the pages table's search, as a page, goes to the ranked search page."""
    return lambda app: guard(datasette, _ranked_search_page(datasette, app))


def _ranked_search_page(datasette, app):
    """`/<archive>/pages?_search=…` as HTML, with no filter and no order of the user's (the
    table's form sends `_sort=url`, its default), is redirected to `/-/mirror/search?q=…`: ranked
    as `mirror search` ranks. Anything else (JSON, a filter, `_sort`) is datasette's own table
    view, whose `_search` is filtered by our `escape_fts` (`prepare_connection`), unranked."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            query = await _table_search(datasette, scope)
            if query is not None:
                location = datasette.urls.path("/-/mirror/search") + "?" + urlencode({"q": query})
                await Response.redirect(location).asgi_send(send)
                return
        await app(scope, receive, send)

    return wrapped


async def _table_search(datasette, scope) -> str | None:
    """The words of a table search of the archive's pages that the search page answers alike."""
    base = datasette.urls.path("/")
    path = scope.get("path", "")
    if not path.startswith(base) or path.count("/") != base.count("/") + 1 or not path.endswith("/pages"):
        return None
    args = parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace"), keep_blank_values=True)
    query = next((value for key, value in args if key == "_search"), "")
    if not query.strip() or any(key != "_search" and not (key == "_sort" and value in ("", "url")) for key, value in args):
        return None
    return query if path[len(base) : -len("/pages")] == await archive_name(datasette) else None


@hookimpl
def register_routes():
    return [
        (r"^/$", home_view),
        (r"^/-/mirror/search$", search_view),
        (r"^/-/mirror/page/(?P<id>[^/]+)$", reader_view),  # a bad id is our 404, not a 500
        (r"^/-/mirror/snapshot/(?P<id>[^/]+)$", snapshot_view),
        (r"^/-/mirror/page/(?P<id>[^/]+)/version/(?P<version>[^/]+)$", version_snapshot_view),
        (r"^/-/mirror/page/(?P<id>[^/]+)/compare$", compare_view),
        (r"^/-/mirror/resource$", resource_view),
        (r"^/-/mirror/screenshot/(?P<id>[^/]+)$", screenshot_view),
    ]


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    """Titles in the pages table open the reader view."""
    if table == "pages" and column == "title" and value and "id" in row.keys():
        href = datasette.urls.path(f"/-/mirror/page/{row['id']}")
        return Markup(f'<a href="{escape(href)}">{escape(value)}</a>')
    return None


@hookimpl
def menu_links(datasette, actor, request):
    return [{"href": datasette.urls.path("/-/mirror/search"), "label": "Search saved articles"}]


METADATA: dict[str, Any] = {
    "title": "mirror: your reading lists, archived",
    "description_html": (
        "Every link from your seed documents, fetched, extracted and readable offline. "
        '<a href="/-/mirror/search">Search saved articles</a> · '
        '<a href="/mirror/link_health">Link health</a> · <a href="/mirror/link_rot">Link rot</a> · '
        '<a href="/mirror/failures">Failures by reason</a>'
    ),
    "databases": {
        "mirror": {
            "description": "The archive: pages, the seed lines that link to them, every fetch attempt and captured image.",
            "tables": {
                "pages": {
                    "title": "Pages",
                    "description": "One row per page (normalized URL). Click a title to read the saved article.",
                    "fts_table": FTS_TABLE,
                    "fts_pk": "id",
                    "label_column": "title",
                    "facets": ["host", "status", {"array": "seeds"}, {"array": "sections"}, {"array": "link_tags"}, "language"],
                },
                "links": {
                    "title": "Links",
                    "description": "Every occurrence of a link in a seed: the file, line, title and section it came from.",
                    "facets": ["seed", "section"],
                    "label_column": "title",
                },
                "attempts": {"title": "Fetch attempts", "description": "The history of every request chain.", "facets": ["error", "http_status"]},
                "resources": {"title": "Images", "description": "Images the articles show, captured in the WARC files.", "facets": ["status"]},
                "seeds": {"title": "Seed documents", "description": "The reading lists that were read."},
                "versions": {
                    "title": "Versions",
                    "description": "Every capture and check of a page: first, same, changed, moved, gone, soft 404, blocked (mirror check).",
                    "facets": ["state", "how"],
                },
                "link_health": {
                    "title": "Link health",
                    "description": "Per reading list: how many links are alive, changed, moved, gone, soft 404s, blocked, or saved "
                    "only from the Wayback Machine, and since when (mirror check keeps it current).",
                },
                "warc_files": {"hidden": True},
                "dead_names": {"hidden": True},
            },
            "queries": {
                "link_rot": {
                    "title": "Link rot",
                    "description": "Pages that were archived and have since gone (found by mirror fetch --refresh). The saved copy is kept.",
                    "sql": (  # (on lines of their own: the query page shows it)
                        "select id, title, url, gone_since, error, error_message, fetched_at as saved_copy_from\n"
                        "from pages where gone_since is not null\norder by gone_since desc"
                    ),
                },
                "failures": {
                    "title": "Failures by reason",
                    "description": "What to retry (mirror fetch --retry-failed) or log into (--cookies).",
                    "sql": (
                        "select error as reason, count(*) as pages, min(error_message) as example,\n"
                        "  group_concat(url, char(10)) as urls\nfrom pages where status = 'failed'\n"
                        "group by error order by pages desc"
                    ),
                },
            },
        }
    },
}
