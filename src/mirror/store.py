"""The archive database: one ordinary SQLite file, `DIR/mirror.db`.

Tables are plain sqlite-utils tables so that datasette, sqlite-utils and the
sqlite3 shell all read them. WAL mode lets readers work while a fetch writes.
"""

from __future__ import annotations

import fcntl
import json
import operator
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import sqlite_utils

from . import _fts, urls, warc
from ._faults import crash_point
from ._types import CaptureKind, Exchange, Extraction, Link, PageResult, PageStatus, PageToFetch, ResourceStatus
from .seeds import COMMAND_LINE, Inventory


__all__ = [
    "DB_NAME",
    "Archive",
    "ArchiveError",
    "ArchiveLocked",
    "InventoryStats",
    "PageToFetch",
    "now",
]

DB_NAME = "mirror.db"
FACETS_INDEX = "pages_search_facets"  # pages.id and the short columns the plugin facets on

# One row per occurrence of a link in a seed.
LINKS_COLUMNS = {
    "seed": str,
    "line": int,
    "col": int,
    "url": str,
    "url_as_written": str,
    "title": str,
    "section": str,
}
# One row per page (normalized URL). Later stages add their own columns.
PAGES_COLUMNS = {
    "url": str,
    # what a reader scans first (datasette shows columns in this order)
    "title": str,
    "sitename": str,
    "date": str,
    "status": str,  # pending, archived, no_text, failed, skipped
    "language": str,
    "host": str,
    "seeds": str,  # JSON array of the seed files that link here (for facets)
    "sections": str,  # JSON array of the sections those links sit in
    "error": str,  # short reason category
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
    "source": str,  # live or wayback
    "wayback_timestamp": str,
    "gone_since": str,  # first time an archived page failed or vanished
    # extraction
    "kind": str,  # html, pdf, text, other
    "author": str,
    "description": str,
    "tags": str,
    "text": str,
    "markdown": str,
    "word_count": int,
    "images": str,  # JSON list of the article's image URLs
    "extracted_at": str,
    "resources_at": str,  # when the article's images were all fetched
    # browser capture (mirror.browser)
    "capture": str,  # http or browser: which capture the article was extracted from
    "rendered_at": str,  # when the browser last rendered the page
    "render_error": str,  # render_timeout, render_failed, browser_crash, blocked, ...
    "render_note": str,  # what happened while rendering, for a person
    "screenshot_warc_file": str,  # PNG of the first screen; the full page is in the same file
    "screenshot_warc_offset": int,
    "screenshot_warc_length": int,
    "full_screenshot_warc_offset": int,
    "full_screenshot_warc_length": int,
    "id": int,  # stable small number: the search index's rowid and reader-view address
}
EXTRACTED_COLUMNS = (
    "kind", "title", "author", "date", "sitename", "description", "language", "tags", "text", "markdown", "word_count", "images"
)
# Images and other resources an article shows, captured in the WARC files.
RESOURCES_COLUMNS = {
    "page_url": str,
    "url": str,
    "status": str,  # archived or failed
    "http_status": int,
    "content_type": str,
    "error": str,
    "error_message": str,
    "warc_file": str,
    "warc_offset": int,
    "warc_length": int,
    "fetched_at": str,
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
WARC_FILES_COLUMNS = {"file": str, "closed_at": str}
SEEDS_COLUMNS = {"seed": str, "links": int, "read_at": str}


class ArchiveError(Exception):
    """The archive folder or database cannot be used."""


class ArchiveLocked(ArchiveError):
    """Another `mirror fetch` holds this archive."""


@dataclass(frozen=True)
class InventoryStats:
    links: int
    pages: int
    new_pages: int
    skipped: int
    removed_links: int


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Archive:
    """An archive folder: the database now, WARC files beside it later."""

    def __init__(self, path: Path | str, *, create: bool = True):
        self.path = Path(path)
        self.db_path = self.path / DB_NAME
        if not self.path.exists():
            if not create:
                raise ArchiveError(f"{self.path}: no archive here (run `mirror links` or `mirror fetch` first)")
            try:
                self.path.mkdir(parents=True)
            except OSError as exc:
                raise ArchiveError(f"{self.path}: cannot create archive folder ({exc.strerror})") from exc
        elif not self.path.is_dir():
            raise ArchiveError(f"{self.path}: not a folder")
        try:
            conn = sqlite3.connect(self.db_path, timeout=30)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA busy_timeout = 30000")
            if self.db.journal_mode != "wal":
                self.db.enable_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"{self.db_path}: cannot open database ({exc})") from exc

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self) -> None:
        with self.db.atomic():
            _ensure_table(self.db["links"], LINKS_COLUMNS, pk=("seed", "line", "col"))
            _ensure_table(self.db["pages"], PAGES_COLUMNS, pk="url")
            _ensure_table(self.db["seeds"], SEEDS_COLUMNS, pk="seed")
            _ensure_table(self.db["attempts"], ATTEMPTS_COLUMNS, pk="id")
            _ensure_table(self.db["warc_files"], WARC_FILES_COLUMNS, pk="file")
            _ensure_table(self.db["resources"], RESOURCES_COLUMNS, pk=("page_url", "url"))
            self.db["resources"].create_index(["url"], if_not_exists=True)
            self.db["attempts"].create_index(["url"], if_not_exists=True)
            self.db["links"].create_index(["url"], if_not_exists=True)
            self.db["pages"].create_index(["status"], if_not_exists=True)
            self._number_pages()
            self.db["pages"].create_index(["id"], unique=True, if_not_exists=True)
            # the reading home's latest articles, and ranked table search's count and facets
            # (read from this index alone, never from the large page rows)
            self.db["pages"].create_index(["status", "fetched_at"], if_not_exists=True)
            self.db["pages"].create_index(
                ["id", "status", "language", "host", "seeds", "sections"], index_name=FACETS_INDEX, if_not_exists=True
            )
            if _fts.ensure_index(self.db):
                self._reindex_rows()

    def _number_pages(self) -> None:
        """Give pages from an older archive their stable id."""
        missing = [r["url"] for r in self.db.query("select url from pages where id is null order by rowid")]
        if missing:
            start = self._next_page_id()
            for offset, url in enumerate(missing):
                self.db.execute("update pages set id = ? where url = ?", [start + offset, url])

    def _next_page_id(self) -> int:
        return self.db.execute("select coalesce(max(id), 0) + 1 from pages").fetchone()[0]

    def record_inventory(self, inventory: Inventory) -> InventoryStats:
        """Store the links of the seeds just read, in one transaction.

        Idempotent: re-recording the same seeds changes nothing. A link that
        left its seed loses its occurrence row; its page stays.
        """
        stamp = now()
        pages = inventory.pages
        with self.db.atomic():
            removed = 0
            by_seed: dict[str, set[tuple[int, int]]] = {seed: set() for seed in inventory.seeds}
            for link in inventory.links:
                by_seed.setdefault(link.seed, set()).add((link.line, link.col))
            for seed in inventory.seeds:
                if seed == COMMAND_LINE:
                    continue
                keep = by_seed[seed]
                stale = [
                    (row["line"], row["col"])
                    for row in self.db.query("select line, col from links where seed = ?", [seed])
                    if (row["line"], row["col"]) not in keep
                ]
                for line, col in stale:
                    self.db.execute("delete from links where seed = ? and line = ? and col = ?", [seed, line, col])
                removed += len(stale)
                self.db["seeds"].upsert({"seed": seed, "links": len(keep), "read_at": stamp}, pk="seed")
            # plain executemany: sqlite-utils' per-row work costs more than SQLite at 1e6 links
            self.db.conn.executemany(
                f"insert into links ({', '.join(_LINK_COLUMNS)}) values ({', '.join('?' for _ in _LINK_COLUMNS)}) "
                "on conflict (seed, line, col) do update set "
                + ", ".join(f"{c} = excluded.{c}" for c in _LINK_COLUMNS if c not in ("seed", "line", "col")),
                map(_link_values, inventory.links),
            )
            known = {row[0] for row in self.db.execute("select url from pages")}
            new_rows = [_page_row(url, links, stamp) for url, links in pages.items() if url not in known]
            next_id = self._next_page_id()
            for offset, row in enumerate(new_rows):
                row["id"] = next_id + offset
            if new_rows:
                columns = list(new_rows[0])
                self.db.conn.executemany(
                    f"insert or ignore into pages ({', '.join(columns)}) values ({', '.join('?' for _ in columns)})",
                    (tuple(row.values()) for row in new_rows),
                )
            self.db.execute(
                """update pages set
                     seeds = (select json_group_array(distinct seed) from links where links.url = pages.url),
                     sections = (select json_group_array(distinct section) from links
                                 where links.url = pages.url and section is not null)"""
            )
            for url in known.intersection(pages):
                candidates = _candidates(pages[url])
                if candidates:
                    self.db["pages"].update(url, {"candidates": json.dumps(candidates)})
        return InventoryStats(
            links=len(inventory.links),
            pages=len(pages),
            new_pages=len(new_rows),
            skipped=sum(1 for links in pages.values() if links[0].skip_reason),
            removed_links=removed,
        )

    # --- fetching -------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive right to fetch into this archive; refuses a second runner."""
        path = self.path / ".fetch.lock"
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise ArchiveLocked(
                f"{self.path}: another mirror fetch (pid {holder}) is running on this archive; "
                "wait for it to finish or stop it"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def pages_to_fetch(self, *, retry_failed: bool = False, refresh: bool = False) -> list[PageToFetch]:
        if refresh:
            statuses = [s for s in PageStatus if s != PageStatus.SKIPPED]
        elif retry_failed:
            statuses = [PageStatus.PENDING, PageStatus.FAILED]
        else:
            statuses = [PageStatus.PENDING]
        rows = self.db.query(
            "select url, candidates, warc_file, etag, last_modified from pages "
            f"where status in ({', '.join('?' for _ in statuses)}) order by first_seen, url",
            statuses,
        )
        return [
            PageToFetch(
                url=row["url"],
                candidates=tuple(json.loads(row["candidates"] or "[]")),
                has_capture=row["warc_file"] is not None,
                etag=row["etag"],
                last_modified=row["last_modified"],
            )
            for row in rows
        ]

    def record_fetch(self, result: PageResult, *, was_archived: bool, extraction: Extraction | None = None) -> None:
        """One page's outcome, its attempts and its article, in one transaction."""
        stamp = now()
        final = result.final
        with self.db.atomic():
            _insert_many(
                self.db,
                "attempts",
                [
                    {
                        "url": result.url,
                        "request_url": a.url,
                        "final_url": a.final_url,
                        "started_at": datetime.fromtimestamp(a.started_at, UTC).isoformat(timespec="seconds"),
                        "elapsed_ms": int(a.elapsed * 1000),
                        "http_status": a.status,
                        "error": a.error,
                        "error_message": a.message,
                        "warc_file": a.location.file if a.location else None,
                        "warc_offset": a.location.offset if a.location else None,
                        "warc_length": a.location.length if a.location else None,
                    }
                    for a in result.attempts
                ],
            )
            self.db.execute("update pages set attempts = coalesce(attempts, 0) + ? where url = ?", [len(result.attempts), result.url])
            update: dict[str, object] = {"checked_at": stamp}
            if final.ok and final.status == 304:
                update |= {"error": None, "error_message": None, "gone_since": None}
            elif final.ok:
                update |= {
                    "status": extraction.status if extraction else PageStatus.ARCHIVED,
                    "http_status": final.status,
                    "final_url": final.final_url,
                    "content_type": final.content_type,
                    "fetched_at": stamp,
                    "etag": final.etag,
                    "last_modified": final.last_modified,
                    "redirects": json.dumps(final.redirects) if final.redirects else None,
                    "warc_file": final.location.file,
                    "warc_offset": final.location.offset,
                    "warc_length": final.location.length,
                    "source": result.source,
                    "capture": CaptureKind.HTTP,
                    "wayback_timestamp": result.wayback_timestamp,
                    "error": None,
                    "error_message": None,
                    "gone_since": None,
                }
            else:
                update |= {"error": final.error, "error_message": final.message}
                if was_archived:  # keep the saved copy; note when it went away
                    self.db.execute("update pages set gone_since = coalesce(gone_since, ?) where url = ?", [stamp, result.url])
                else:
                    update |= {"status": PageStatus.FAILED, "http_status": final.status, "final_url": final.final_url}
            _update_page(self.db, result.url, update)
            if extraction is not None:
                self._save_extraction(result.url, extraction)
            crash_point("commit")

    def save_extraction(self, url: str, extraction: Extraction) -> None:
        """Store a (re-)extraction of a captured page and re-index it."""
        self.save_extractions([(url, extraction)])

    def save_extractions(self, items: Iterable[tuple[str, Extraction]]) -> int:
        """Many (re-)extractions in one transaction; returns how many."""
        count = 0
        with self.db.atomic():
            for url, extraction in items:
                _update_page(self.db, url, {"status": extraction.status})
                self._save_extraction(url, extraction)
                count += 1
        return count

    def _save_extraction(self, url: str, extraction: Extraction) -> None:
        row = extraction.as_row()
        values = {column: row[column] for column in EXTRACTED_COLUMNS}
        _update_page(self.db, url, {**values, "extracted_at": now()})
        page_id = self.db.execute("select id from pages where url = ?", [url]).fetchone()[0]
        self.db.execute(f"delete from {_fts.FTS_TABLE} where rowid = ?", [page_id])
        if extraction.status == PageStatus.ARCHIVED:
            self.db.execute(*_fts.index_insert(page_id, row))

    def rebuild_index(self) -> int:
        """Re-create the search index from the pages table; returns pages indexed."""
        with self.db.atomic():
            self.db.execute(f"drop table if exists {_fts.FTS_TABLE}")
            _fts.ensure_index(self.db)
            return self._reindex_rows()

    def _reindex_rows(self) -> int:
        rows = self.db.query(
            f"select id, {', '.join(_fts.FTS_COLUMNS)} from pages where status = 'archived' and text is not null"
        )
        count = 0
        for row in list(rows):
            self.db.execute(*_fts.index_insert(row["id"], row))
            count += 1
        return count

    def captured_pages(self) -> list[tuple[str, str, warc.WarcLocation]]:
        """(url, final_url, capture) of every page with a saved copy."""
        rows = self.db.query(
            "select url, final_url, warc_file, warc_offset, warc_length from pages where warc_file is not null order by url"
        )
        return [(r["url"], r["final_url"] or r["url"], warc.WarcLocation(r["warc_file"], r["warc_offset"], r["warc_length"])) for r in rows]

    def pages_to_render(self, every_html: bool, challenges: tuple[str, ...], shell_words: int) -> list[dict]:
        """Pages whose latest HTTP capture the browser has not rendered yet and should.

        Live captures only (a Wayback copy's page is gone from the web). Pages without text, thin pages (checked for an app shell by the caller),
        every HTML page with `every_html`, and failed pages whose reason starts
        with one of `challenges` (JavaScript challenges a browser passes).
        """
        thin = "1" if every_html else f"status = 'no_text' or coalesce(word_count, 0) < {int(shell_words)}"
        challenge = " or ".join("error_message like ?" for _ in challenges) or "0"
        rows = self.db.query(
            f"""select id, url, status, final_url, word_count, warc_file, warc_offset, warc_length, error
                from pages where
                  (status in ('archived', 'no_text') and kind = 'html' and coalesce(capture, 'http') = 'http'
                   and coalesce(source, 'live') = 'live'
                   and ({thin}) and (rendered_at is null or rendered_at < fetched_at))
                  or (status = 'failed' and error = 'blocked' and ({challenge})
                   and (rendered_at is null or rendered_at < checked_at))
                order by id""",
            [f"{c}%" for c in challenges],
        )
        return [dict(r) for r in rows]

    def last_capture(self, url: str) -> warc.WarcLocation | None:
        """The latest response captured for a page's URL (a failed page's too)."""
        row = self.db.execute(
            "select warc_file, warc_offset, warc_length from attempts where url = ? and warc_file is not null order by id desc limit 1",
            [url],
        ).fetchone()
        return warc.WarcLocation(*row) if row else None

    def record_render(
        self, url: str, values: dict[str, object], extraction: Extraction | None, images: list[Exchange], done: bool = True
    ) -> None:
        """A browser capture's outcome, its article (when it won) and its images, in one transaction.

        Not `done` (the browser crashed): the page is rendered again on the next run.
        """
        with self.db.atomic():
            _update_page(self.db, url, {**values, "rendered_at": now() if done else None})
            if extraction is not None:
                self._save_extraction(url, extraction)
                self.record_resources(url, images)
            crash_point("render_commit")

    def pages_missing_images(self) -> list[tuple[str, str, list[str]]]:
        """(url, final_url, image URLs) of archived articles whose images are not all fetched."""
        rows = self.db.query(
            "select url, final_url, images from pages where status = 'archived' and images is not null and resources_at is null"
        )
        return [(r["url"], r["final_url"] or r["url"], json.loads(r["images"])) for r in rows]

    def archived_resource_urls(self) -> set[str]:
        return {r["url"] for r in self.db.query("select distinct url from resources where status = 'archived'")}

    def record_resources(self, page_url: str, exchanges: list[Exchange]) -> None:
        """A page's resources and that they are done, in one transaction (plain SQL:
        sqlite-utils' upsert inspects the table on every call, milliseconds per image)."""
        stamp = now()
        rows = []
        for exchange in exchanges:
            loc = exchange.location if exchange.ok else None
            rows.append({
                "page_url": page_url,
                "url": exchange.url,
                "status": ResourceStatus.ARCHIVED if exchange.ok else ResourceStatus.FAILED,
                "http_status": exchange.status,
                "content_type": exchange.content_type,
                "error": exchange.error,
                "error_message": exchange.message,
                "warc_file": loc.file if loc else None,
                "warc_offset": loc.offset if loc else None,
                "warc_length": loc.length if loc else None,
                "fetched_at": stamp,
            })
        with self.db.atomic():
            _insert_many(self.db, "resources", rows, verb="insert or replace")
            _update_page(self.db, page_url, {"resources_at": stamp})

    def unclosed_warcs(self) -> list[Path]:
        """WARC files a run left open (it crashed or was stopped): they may end in a
        truncated record, and may hold responses the database does not point at yet."""
        folder = self.path / warc.WARC_DIR
        if not folder.is_dir():
            return []
        closed = {row["file"] for row in self.db.query("select file from warc_files where closed_at is not null")}
        return [p for p in sorted(folder.glob("*.warc.gz")) if p.name not in closed]

    def repair_warcs(self, suspects: list[Path] | None = None) -> list[tuple[Path, int]]:
        """Cut truncated tails off WARC files a crashed run left open. They stay
        unclosed until `mark_warcs_closed`, after their responses are recovered."""
        return warc.repair(self.unclosed_warcs() if suspects is None else suspects)

    def mark_warcs_closed(self, files: list[str]) -> None:
        if files:
            with self.db.atomic():
                self.db["warc_files"].upsert_all(({"file": f, "closed_at": now()} for f in files), pk="file")

    def page_statuses(self) -> dict[str, str]:
        return {row["url"]: row["status"] for row in self.db.query("select url, status from pages")}


def _ensure_table(table: sqlite_utils.db.Table, columns: dict[str, type], pk: str | tuple[str, ...]) -> None:
    if not table.exists():
        table.create(columns, pk=pk, not_null={pk} if isinstance(pk, str) else set(pk))
        return
    existing = {c.name for c in table.columns}
    for name, kind in columns.items():
        if name not in existing:
            table.add_column(name, kind)


def _update_page(db: sqlite_utils.Database, url: str, values: dict[str, object]) -> None:
    """UPDATE by hand: sqlite-utils' update() inspects the table on every call (the fetch hot path)."""
    assignments = ", ".join(f"[{column}] = ?" for column in values)
    db.execute(f"update pages set {assignments} where url = ?", [*values.values(), url])


def _insert_many(db: sqlite_utils.Database, table: str, rows: list[dict[str, object]], verb: str = "insert") -> None:
    if rows:
        columns = list(rows[0])
        sql = f"{verb} into [{table}] ({', '.join(f'[{c}]' for c in columns)}) values ({', '.join('?' for _ in columns)})"
        db.conn.executemany(sql, [[row[c] for c in columns] for row in rows])


_LINK_COLUMNS = ("seed", "line", "col", "url", "url_as_written", "title", "section")
_link_values = operator.attrgetter(*_LINK_COLUMNS)  # a links row as a tuple, in that order


def _page_row(url: str, links: list[Link], stamp: str) -> dict[str, object]:
    # seeds classified every link already: only a skipped one needs its message
    problem = urls.classify(links[0].url_as_written) if links[0].skip_reason else None
    candidates = _candidates(links)
    return {
        "url": url,
        "host": _host(url) if not problem else None,
        "status": PageStatus.SKIPPED if problem else PageStatus.PENDING,
        "error": problem[0] if problem else None,
        "error_message": problem[1] if problem else None,
        "candidates": json.dumps(candidates) if candidates else None,
        "first_seen": stamp,
    }


def _host(url: str) -> str | None:
    """urlsplit(url).hostname, with a fast path for the plain `scheme://host[:port]/…` of a normalized URL."""
    netloc = url.partition("://")[2].partition("/")[0].partition("?")[0].partition("#")[0]
    if not netloc or "@" in netloc or "[" in netloc or "%" in netloc:
        return urlsplit(url).hostname
    return netloc.partition(":")[0].lower() or None


def _candidates(links: list[Link]) -> list[str]:
    seen: list[str] = []
    for link in links:
        seen.extend(c for c in link.candidates if c not in seen)
    return seen
