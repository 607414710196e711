"""The datasette plugin: our metadata, Chinese-aware table search, reader and snapshot views.

Registered as a datasette entry point, so `datasette archive/mirror.db` and
`mirror serve` behave the same.
"""

from __future__ import annotations

import sqlite3

from datasette import hookimpl
from markupsafe import Markup, escape

from ..search import FTS_TABLE, build_match
from .screenshots import screenshot_view
from .views import reader_view, resource_view, search_view, snapshot_view

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
    return METADATA


@hookimpl
def register_routes():
    return [
        (r"^/-/mirror/search$", search_view),
        (r"^/-/mirror/page/(?P<id>\d+)$", reader_view),
        (r"^/-/mirror/snapshot/(?P<id>\d+)$", snapshot_view),
        (r"^/-/mirror/resource$", resource_view),
        (r"^/-/mirror/screenshot/(?P<id>\d+)$", screenshot_view),
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


METADATA = {
    "title": "mirror: your reading lists, archived",
    "description_html": (
        'Every link from your seed documents, fetched, extracted and readable offline. '
        '<a href="/-/mirror/search">Search saved articles</a> · '
        '<a href="/mirror/link_rot">Link rot</a> · <a href="/mirror/failures">Failures by reason</a>'
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
                    "facets": ["host", "status", {"array": "seeds"}, {"array": "sections"}, "language"],
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
                "warc_files": {"hidden": True},
            },
            "queries": {
                "link_rot": {
                    "title": "Link rot",
                    "description": "Pages that were archived and have since gone (found by mirror fetch --refresh). The saved copy is kept.",
                    "sql": (
                        "select id, title, url, gone_since, error, error_message, fetched_at as saved_copy_from "
                        "from pages where gone_since is not null order by gone_since desc"
                    ),
                },
                "failures": {
                    "title": "Failures by reason",
                    "description": "What to retry (mirror fetch --retry-failed) or log into (--cookies).",
                    "sql": (
                        "select error as reason, count(*) as pages, min(error_message) as example, "
                        "group_concat(url, char(10)) as urls from pages where status = 'failed' "
                        "group by error order by pages desc"
                    ),
                },
            },
        }
    },
}
