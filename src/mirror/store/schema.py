"""The database's layout, how an archive is brought up to it, and how it is opened.

Tables are plain sqlite-utils tables so that datasette, sqlite-utils and the
sqlite3 shell all read them. WAL mode lets readers work while a fetch writes.
`PRAGMA user_version` counts the migrations applied: opening for writing
applies the missing ones; opening read-only (search, show, serve) never writes,
so a read-only archive can still be searched and browsed.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils

from .. import _fts
from .._enums import PageStatus
from ..check.link_health import HEALTH_INDEX, HEALTH_VIEW, LINK_HEALTH_SQL

__all__ = ["DB_NAME", "FACETS_INDEX", "SCHEMA_VERSION", "migrate", "open_db"]

DB_NAME = "mirror.db"
FACETS_INDEX = "pages_search_facets"  # pages.id and the short columns the plugin facets on
FACETS_COLUMNS = ["id", "status", "language", "host", "seeds", "sections", "link_tags"]

# One row per occurrence of a link in a seed.
LINKS_COLUMNS = {
    "seed": str,
    "line": int,
    "col": int,
    "url": str,
    "url_as_written": str,
    "title": str,
    "section": str,
    "tags": str,  # comma-separated, from a bookmark service's export (Pinboard, Pocket, Raindrop, a feed's categories)
    "added": str,  # when the link was saved there (ISO)
}
# One row per page (normalized URL). Later stages add their own columns.
PAGES_COLUMNS = {
    "url": str,
    # what a reader scans first (datasette shows columns in this order)
    "title": str,
    "sitename": str,
    "date": str,
    "status": str,  # a PageStatus
    "language": str,
    "host": str,
    "seeds": str,  # JSON array of the seed files that link here (for facets)
    "sections": str,  # JSON array of the sections those links sit in
    "link_tags": str,  # JSON array of the tags those links were saved with (a Pocket, Pinboard or bookmark export's)
    "error": str,  # a Reason (short category)
    "error_message": str,  # what a person reads
    "candidates": str,  # JSON list of glued-URL repairs
    "first_seen": str,
    # fetch
    "http_status": int,
    "final_url": str,
    "content_type": str,
    "fetched_at": str,  # when the saved copy was captured
    "checked_at": str,  # last time we asked the site
    "attempts": int,
    "etag": str,
    "last_modified": str,
    "redirects": str,  # JSON list of the hops after the first URL
    "warc_file": str,  # the latest good capture, relative to archive/warc/
    "warc_offset": int,
    "warc_length": int,
    "source": str,  # a Source: live, wayback, or added (saved by the user's browser; `provenance` says from what)
    "provenance": str,  # JSON, an added page's: the file, its format, when the browser saved it, its headers
    "wayback_timestamp": str,
    "gone_since": str,  # first time an archived page failed or vanished
    "health": str,  # a VersionState: what the latest capture or check found (versions has every one)
    "health_since": str,  # since when the page has been in that state
    # extraction
    "kind": str,  # html, pdf, text, other
    "author": str,
    "description": str,
    "tags": str,
    "text": str,
    "markdown_z": bytes,  # the article as Markdown, zlib-compressed (`article_markdown` reads it): read whole, never searched
    "word_count": int,
    "images": str,  # JSON list of the article's image URLs
    "extracted_at": str,
    "extract_note": str,  # what went wrong while extracting (a deadline, a capture too big to read), for a person
    "resources_at": str,  # when the article's images were all fetched
    "stylesheets": str,  # JSON list: the stylesheets the page links, fetched with its images (a stopped run's are resumed)
    "canonical": str,  # the URL the page declares as its own (rel=canonical, og:url), normalized, when another
    "same_as": str,  # a duplicate's original: the page archived first that ends at its final URL (or canonical, same title)
    # browser capture (mirror.browser)
    "capture": str,  # a CaptureKind: which capture the article was extracted from
    "rendered_at": str,  # when the browser last rendered the page
    "render_error": str,  # a RenderError
    "render_note": str,  # what happened while rendering, for a person
    "render_gain": int,  # 1: the last render improved on the HTTP capture, 0: it did not (not rendered again while the HTTP text stays the same)
    "render_basis": str,  # the text hash of the HTTP article the last render was compared with
    "screenshot_warc_file": str,  # PNG of the first screen; the full page is in the same file
    "screenshot_warc_offset": int,
    "screenshot_warc_length": int,
    "full_screenshot_warc_offset": int,
    "full_screenshot_warc_length": int,
    "id": int,  # stable small number: the search index's rowid and reader-view address
}
EXTRACTED_COLUMNS = (
    "kind",
    "title",
    "author",
    "date",
    "sitename",
    "description",
    "language",
    "tags",
    "text",
    "markdown",
    "word_count",
    "images",
    "extract_note",
)


def stored_extraction(row: Mapping[str, Any]) -> dict[str, object]:
    """An extraction's columns as `pages` stores them: the Markdown compressed (`markdown_z`)."""
    values = {column: row[column] for column in EXTRACTED_COLUMNS if column != "markdown"}
    values["markdown_z"] = compress_markdown(row["markdown"])
    return values


def compress_markdown(markdown: str | None) -> bytes | None:
    """The second form of the article, stored at about a third of its size (issue 29)."""
    return zlib.compress(markdown.encode("utf-8"), 6) if markdown else None


def article_markdown(value: bytes | str | None) -> str | None:
    """`pages.markdown_z` read back (a damaged value reads as none, never an error)."""
    if not value:
        return None
    if isinstance(value, str):
        return value
    try:
        return zlib.decompress(value).decode("utf-8")
    except (zlib.error, UnicodeDecodeError):
        return None


# Images and other resources an article shows, captured in the WARC files.
RESOURCES_COLUMNS = {
    "page_url": str,
    "url": str,
    "status": str,  # a ResourceStatus
    "http_status": int,
    "content_type": str,
    "error": str,
    "error_message": str,
    "warc_file": str,
    "warc_offset": int,
    "warc_length": int,
    "fetched_at": str,
    "tries": int,  # runs that deferred it (its host name had no answer when the run ended)
    "retry_at": str,  # a deferred one: when a run may ask for it again (the backoff grows with `tries`)
}
# One row per request chain: the history of every page.
ATTEMPTS_COLUMNS = {
    "id": int,
    "url": str,
    "request_url": str,
    "final_url": str,
    "started_at": str,
    "elapsed_ms": int,
    "http_status": int,
    "error": str,
    "error_message": str,
    "warc_file": str,
    "warc_offset": int,
    "warc_length": int,
}
# One row per capture or check of a page: its versions over time. `pages` holds the latest good one.
VERSIONS_COLUMNS = {
    "id": int,
    "page_url": str,
    "captured_at": str,
    "how": str,  # live, wayback or browser
    "state": str,  # a VersionState
    "http_status": int,
    "final_url": str,
    "error": str,  # a Reason, when the check failed
    "note": str,  # why, for a person (a soft 404's notice, an error message)
    "text_hash": str,  # of the article's text, whitespace aside (`mirror._util.similar.text_hash`)
    "word_count": int,
    "changed": float,  # how much of the text changed against the version before, 0 to 1
    "title": str,
    "warc_file": str,  # the response (or revisit) record of this capture
    "warc_offset": int,
    "warc_length": int,
    "revisit_of": int,  # the version whose payload this one repeats (a WARC revisit record, or a 304)
    "host_dead": int,  # 1: the check found the host dead (no such name, connection refused), not merely unanswered
}
WARC_FILES_COLUMNS = {"file": str, "closed_at": str}
SEEDS_COLUMNS = {"seed": str, "links": int, "read_at": str, "title": str}  # title: the list's own (`# heading`), for exports
# Host names a run found not to exist (NXDOMAIN), believed until `until` (a Unix time): the next run
# over the archive does not ask again (`--refresh` does).
DEAD_NAMES_COLUMNS = {"name": str, "until": float}


def _baseline(db: sqlite_utils.Database) -> None:
    """Every table, column and index above, whatever older layout the file had
    (archives from before versioned migrations all start here)."""
    _ensure_table(db.table("links"), LINKS_COLUMNS, pk=("seed", "line", "col"))
    _ensure_table(db.table("pages"), PAGES_COLUMNS, pk="url")
    _ensure_table(db.table("seeds"), SEEDS_COLUMNS, pk="seed")
    _ensure_table(db.table("attempts"), ATTEMPTS_COLUMNS, pk="id")
    _ensure_table(db.table("warc_files"), WARC_FILES_COLUMNS, pk="file")
    _ensure_table(db.table("dead_names"), DEAD_NAMES_COLUMNS, pk="name")
    _ensure_table(db.table("resources"), RESOURCES_COLUMNS, pk=("page_url", "url"))
    db.table("resources").create_index(["url"], if_not_exists=True)
    db.table("attempts").create_index(["url"], if_not_exists=True)
    db.table("links").create_index(["url"], if_not_exists=True)
    _number_pages(db)
    db.table("pages").create_index(["id"], unique=True, if_not_exists=True)
    # the reading home's latest articles, and ranked table search's count and facets
    # (read from this index alone, never from the large page rows)
    db.table("pages").create_index(["status", "fetched_at"], if_not_exists=True)
    db.table("pages").create_index(FACETS_COLUMNS, index_name=FACETS_INDEX, if_not_exists=True)
    # the link_health view (the reading home's panel) reads each linked page's state from this index
    # alone: through the page rows, 100,000 links took more than datasette's second
    db.table("pages").create_index(
        ["url", "status", "source", "health", "health_since", "warc_file"], index_name=HEALTH_INDEX, unique=True, if_not_exists=True
    )
    if _fts.ensure_index(db):
        reindex_rows(db)


def _duplicates(db: sqlite_utils.Database) -> None:
    """pages.stylesheets, canonical and same_as, and what finds the page another one duplicates
    in one step: partial indexes, so that the million pages still pending cost them nothing."""
    _baseline(db)
    db.execute("create index if not exists idx_pages_final_url on pages(final_url) where final_url is not null")
    db.execute("create index if not exists idx_pages_canonical on pages(canonical) where canonical is not null")


def _same_as_index(db: sqlite_utils.Database) -> None:
    """The duplicates of a page, found at once when it stops being an article (a re-extraction
    of a whole archive asks for each page that changed)."""
    db.execute("create index if not exists idx_pages_same_as on pages(same_as) where same_as is not null")


def _versions(db: sqlite_utils.Database) -> None:
    """The versions table, and each captured page's saved copy as its first version (the copy an
    archive made before versions were kept)."""
    _baseline(db)
    _ensure_table(db.table("versions"), VERSIONS_COLUMNS, pk="id")
    db.table("versions").create_index(["page_url", "id"], if_not_exists=True)
    db.execute(f"create view if not exists {HEALTH_VIEW} as {LINK_HEALTH_SQL}")
    from .._util.similar import text_hash

    rows = db.execute(
        "select url, coalesce(fetched_at, first_seen), coalesce(capture, 'http'), source, http_status, final_url, text, "
        "word_count, title, warc_file, warc_offset, warc_length from pages where warc_file is not null "
        "and not exists (select 1 from versions where page_url = pages.url) order by id"
    )
    for row in rows.fetchall():
        url, at, capture, source, status, final, text, words, title, file, offset, length = row
        db.execute(
            "insert into versions (page_url, captured_at, how, state, http_status, final_url, text_hash, word_count, title, "
            "warc_file, warc_offset, warc_length) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                url,
                at,
                "browser" if capture == "browser" else source or "live",
                "first",
                status,
                final,
                text_hash(text),
                words,
                title,
                file,
                offset,
                length,
            ],
        )
        db.execute("update pages set health = 'first', health_since = ? where url = ?", [at, url])


def _compact(db: sqlite_utils.Database) -> None:
    """Issue 29: the database at most 2.5x its text. The search index keeps no copy of the text
    (contentless FTS5, rebuilt from `pages`), and the Markdown is compressed (`markdown_z`). The
    space freed is given back by the VACUUM `migrate` runs after this step."""
    _baseline(db)  # markdown_z, the link-health index, and the contentless index made and filled
    db.execute(f"drop view if exists {HEALTH_VIEW}")  # now read through that index
    db.execute(f"create view {HEALTH_VIEW} as {LINK_HEALTH_SQL}")
    columns = {row[1] for row in db.execute("pragma table_info(pages)")}
    if "markdown" in columns:
        rows = db.execute("select rowid, markdown from pages where markdown is not null")
        while batch := rows.fetchmany(2000):
            db.conn.executemany("update pages set markdown_z = ? where rowid = ?", [(compress_markdown(md), rowid) for rowid, md in batch])
        try:
            db.execute("alter table pages drop column markdown")
        except sqlite3.OperationalError:  # a view of the user's names it: the column stays, emptied
            db.execute("update pages set markdown = null")


def _link_tags(db: sqlite_utils.Database) -> None:
    """pages.link_tags (the tags of a page's links, for the table's facet), in the facets index;
    filled from the links an older archive has."""
    db.execute(f"drop index if exists {FACETS_INDEX}")
    _baseline(db)
    db.execute(SET_LINK_TAGS + " where url in (select url from links where tags is not null)")


# a page's link tags: `links.tags` is "a, b" (`seeds.imports.tag_list`: no tag holds a comma), made a
# JSON array by its JSON-quoted form, split where ", " is (escaping never writes one)
_TAGS_ARRAY = "'[\"' || replace(substr(json_quote(links.tags), 2, length(json_quote(links.tags)) - 2), ', ', '\",\"') || '\"]'"
SET_LINK_TAGS = f"""update pages set link_tags = (select json_group_array(distinct tag.value)
    from links, json_each({_TAGS_ARRAY}) as tag where links.url = pages.url and links.tags is not null)"""


def _second_hour(db: sqlite_utils.Database) -> None:
    """Issue 42: the link_health view grouped by its own columns (a list's `first` and `same`
    pages were two `alive` rows, and the reading home showed one), a page never archived `failed`;
    resources.tries and retry_at, and the deferred ones found at once (a partial index)."""
    _baseline(db)
    db.execute(f"drop view if exists {HEALTH_VIEW}")
    db.execute(f"create view {HEALTH_VIEW} as {LINK_HEALTH_SQL}")
    db.execute("create index if not exists idx_resources_deferred on resources(retry_at) where retry_at is not null")


def _drop_status_index(db: sqlite_utils.Database) -> None:
    """`idx_pages_status` repeated the first column of (status, fetched_at): one index less to
    keep up on every write (and to build for a million new pages)."""
    db.execute("drop index if exists idx_pages_status")


def _searchable_by_tools(db: sqlite_utils.Database) -> None:
    """Issue 44: the index an external-content table of `pages` (`mirror._fts`), so that
    sqlite-utils, plain datasette and datasette-search-all find it, and each page's rowid its id,
    which they join on. The index is rebuilt from the rows (the same postings, declared anew).
    And seeds.title (the list's `# heading`, what the exports name a book or a folder by)."""
    _number_pages(db)
    _align_rowids(db)
    _baseline(db)  # `ensure_index` finds the contentless layout: made again and filled


def _align_rowids(db: sqlite_utils.Database) -> None:
    """pages.rowid = pages.id for every row (ids are unique, so no row can stand in another's way
    once the moved ones have stepped aside to negative rowids)."""
    if db.execute("select 1 from pages where rowid != id limit 1").fetchone():
        db.execute("update pages set rowid = -id where rowid != id")
        db.execute("update pages set rowid = -rowid where rowid < 0")


# Applied in order, each once; `PRAGMA user_version` is how many have run. To change the
# layout, edit the column lists above and append a step (`_baseline` again will do for
# new columns and indexes).
# 3: pages.extract_note; 4: dead_names; 5: pages.stylesheets, canonical, same_as (duplicates); 6: same_as indexed;
# 7: versions, pages.health; 8: links.tags and added (imports); 9: contentless index, markdown_z (issue 29);
# 10: pages.render_gain and render_basis (the browser inside the fetch); 11: pages.provenance (pages the user added);
# 12: pages.link_tags (issue 42); 13: the index found by sqlite-utils and datasette, seeds.title (issue 44);
# 14: the link_health view regrouped, resources.tries and retry_at (deferred resources asked again after a backoff)
MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _baseline,
    _drop_status_index,
    _baseline,
    _baseline,
    _duplicates,
    _same_as_index,
    _versions,
    _baseline,
    _compact,
    _baseline,
    _baseline,
    _link_tags,
    _searchable_by_tools,
    _second_hour,
]
VACUUM_AFTER = 9  # a migration to this version or past it frees much of the file: VACUUM gives it back
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite_utils.Database) -> int:
    """Apply the migrations this database has not had, in one transaction; returns how many."""
    with db.atomic():
        version: int = db.execute("PRAGMA user_version").fetchone()[0]
        for step in MIGRATIONS[version:]:
            step(db)
        if version < SCHEMA_VERSION:
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if 0 < version < VACUUM_AFTER <= SCHEMA_VERSION and db.execute("select count(*) from pages").fetchone()[0]:
        db.execute("VACUUM")  # (outside the transaction: SQLite's rule) an archive of old shrinks in place
    return max(0, SCHEMA_VERSION - version)


def open_db(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """The archive's database. Writable: WAL, migrated. Read-only: never written to, so
    it opens on a read-only folder too (a WAL file there is read as it is)."""
    if readonly:
        return _connect_readonly(path)
    import sqlite_utils  # (a second's tenth to import: not for search)

    # (record_inventory's bulk inserts run on a second thread, in the caller's transaction)
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = wal")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(sqlite_utils.Database(conn))
    except BaseException:
        conn.close()
        raise
    return conn


def needs_migration(path: Path) -> bool:
    conn = _connect_readonly(path)
    try:
        return bool(conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION)
    finally:
        conn.close()


def _connect_readonly(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30)
    try:
        conn.execute("select count(*) from sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        # a WAL database in a folder we cannot write: no -shm can be made, so read it as
        # a file nobody changes (nobody can: the folder is read-only)
        conn.close()
        conn = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        conn.execute("select count(*) from sqlite_master").fetchone()
        return conn


def reindex_rows(db: sqlite_utils.Database, *, missing_only: bool = False, urls: list[str] | None = None) -> int:
    """Index every archived page's text (or only those the index lacks, or those of `urls`); returns how many."""
    missing = f" and id not in (select id from {_fts.INDEXED})" if missing_only else ""
    if urls is not None:
        missing += f" and url in ({', '.join('?' for _ in urls)})"
        for (page_id,) in db.execute(f"select id from pages where url in ({', '.join('?' for _ in urls)})", urls).fetchall():
            _fts.unindex_page(db, page_id)
    rows = db.query(
        f"select id, {', '.join(_fts.FTS_COLUMNS)} from pages where status = ? and text is not null{missing}",
        [PageStatus.ARCHIVED, *(urls or [])],
    )
    count = 0
    for row in list(rows):
        db.execute(*_fts.index_insert(row["id"], row))
        count += 1
    return count


def next_page_id(db: sqlite_utils.Database) -> int:
    return int(db.execute("select coalesce(max(id), 0) + 1 from pages").fetchone()[0])


def _number_pages(db: sqlite_utils.Database) -> None:
    """Give pages from an older archive their stable id."""
    missing = [r["url"] for r in db.query("select url from pages where id is null order by rowid")]
    if missing:
        start = next_page_id(db)
        for offset, url in enumerate(missing):
            db.execute("update pages set id = ? where url = ?", [start + offset, url])


def _ensure_table(table: sqlite_utils.db.Table, columns: Mapping[str, type], pk: str | tuple[str, ...]) -> None:
    if not table.exists():
        table.create(dict(columns), pk=pk, not_null={pk} if isinstance(pk, str) else set(pk))
        return
    existing = {c.name for c in table.columns}
    for name, kind in columns.items():
        if name not in existing:
            table.add_column(name, kind)
