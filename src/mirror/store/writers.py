"""Writes: the inventory, each page's fetch, extraction, render and resources, each in one transaction.

Hot paths use plain SQL: sqlite-utils' update() and upsert() inspect the table
on every call (milliseconds per row at fetch speed).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .. import _fts
from .._faults import crash_point
from .._types import COMMAND_LINE, CaptureKind, Exchange, Extraction, Link, PageResult, PageStatus, ResourceStatus
from .folder import now
from .queries import warc_values
from .schema import EXTRACTED_COLUMNS, next_page_id, reindex_rows

if TYPE_CHECKING:
    import sqlite_utils

    from ..seeds import Inventory

__all__ = ["InventoryStats", "RowWriters"]


@dataclass(frozen=True)
class InventoryStats:
    links: int
    pages: int
    new_pages: int
    skipped: int
    removed_links: int


class RowWriters:
    """The writes of an `Archive` (mixed into it)."""

    db: sqlite_utils.Database

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
            next_id = next_page_id(self.db)
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

    def record_fetch(self, result: PageResult, *, had_capture: bool, extraction: Extraction | None = None) -> None:
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
                        **warc_values(a.location),
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
                    **warc_values(final.location),
                    "source": result.source,
                    "capture": CaptureKind.HTTP,
                    "wayback_timestamp": result.wayback_timestamp,
                    "error": None,
                    "error_message": None,
                    "gone_since": None,
                }
            else:
                update |= {"error": final.error, "error_message": final.message}
                if had_capture:  # keep the saved copy; note when it went away
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
            self.db.execute(*_fts.index_insert(page_id, row, extraction.search_index))

    def rebuild_index(self) -> int:
        """Re-create the search index from the pages table; returns pages indexed."""
        with self.db.atomic():
            self.db.execute(f"drop table if exists {_fts.FTS_TABLE}")
            _fts.ensure_index(self.db)
            return reindex_rows(self.db)

    def complete_index(self) -> int:
        """After a re-extraction, which indexed every page it saved: the index holds exactly
        the archived pages, the pages it lacks indexed from their rows (not all of them again,
        as `rebuild_index` would). Returns how many pages the index holds."""
        with self.db.atomic():
            self.db.execute(
                f"delete from {_fts.FTS_TABLE} where rowid not in "
                "(select id from pages where status = ? and text is not null)",
                [PageStatus.ARCHIVED],
            )
            reindex_rows(self.db, missing_only=True)
            return self.db.execute(f"select count(*) from {_fts.FTS_TABLE}").fetchone()[0]

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

    def record_resources(self, page_url: str, exchanges: list[Exchange]) -> None:
        """A page's resources and that they are done, in one transaction (plain SQL:
        sqlite-utils' upsert inspects the table on every call, milliseconds per image)."""
        stamp = now()
        rows = []
        for exchange in exchanges:
            rows.append({
                "page_url": page_url,
                "url": exchange.url,
                "status": ResourceStatus.ARCHIVED if exchange.ok else ResourceStatus.FAILED,
                "http_status": exchange.status,
                "content_type": exchange.content_type,
                "error": exchange.error,
                "error_message": exchange.message,
                **warc_values(exchange.location if exchange.ok else None),
                "fetched_at": stamp,
            })
        with self.db.atomic():
            _insert_many(self.db, "resources", rows, verb="insert or replace")
            _update_page(self.db, page_url, {"resources_at": stamp})


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
    problem = None
    if links[0].skip_reason:
        from ..urls import classify  # (courlan: not loaded for search and show)

        problem = classify(links[0].url_as_written)
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
