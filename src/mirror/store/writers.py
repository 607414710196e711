"""Writes: the inventory, each page's fetch, extraction, render and resources, each in one transaction.

Hot paths use plain SQL: sqlite-utils' update() and upsert() inspect the table
on every call (milliseconds per row at fetch speed).
"""

from __future__ import annotations

import functools
import json
import operator
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from .. import _fts
from .._faults import crash_point
from .._gc import gc_paused
from .._types import COMMAND_LINE, CaptureKind, Exchange, Extraction, Link, PageResult, PageStatus, Reason, ResourceStatus
from ._bulk import BulkWriter
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
    conn: sqlite3.Connection
    adopted: list[str]
    released: list[str]

    def record_inventory(self, inventory: Inventory) -> InventoryStats:
        """Store the links of the seeds just read, in one transaction.

        Idempotent: re-recording the same seeds changes nothing but the seeds'
        `read_at`. A link that left its seed loses its occurrence row; its page stays.
        Only link rows that changed are written, and only pages whose links changed
        are updated: at 1e6 links, per-row work is all the time there is.
        """
        stamp = now()
        conn = self.conn
        with gc_paused(), self.db.atomic():
            diff = _diff_links(conn, inventory)
            inserted, touched = diff.inserted, diff.touched
            known = {row[0] for row in conn.execute("select url from pages")}
            first: dict[str, Link] = {}  # each page's first link, in seed order
            for link in inventory.links:
                first.setdefault(link.url, link)
            new_urls = [url for url in first if url not in known]
            next_id = next_page_id(self.db)
            # the rows go in on a second thread (SQLite) while this one builds the next (Python).
            # links.url comes in no order: that index is built there once the links are in. The
            # pages' indexes lead with id or status: new pages, of growing ids, add to their ends.
            links_indexes = _drop_indexes(conn, "links", len(inserted))
            with BulkWriter(conn) as bulk:
                for seed, links in groupby(inserted, key=operator.attrgetter("seed")):
                    bulk.insert("insert", "links", _LINK_COLUMNS[1:], map(_link_values, links), {"seed": seed})
                for sql in links_indexes:
                    bulk.execute(sql)
                glued = _glued_candidates(inventory.links)
                facets = _new_page_facets(inserted, known, touched)
                for size, rows in groupby(_page_rows(new_urls, first, glued, facets, next_id), key=len):
                    plain = size == len(_PLAIN_PAGE_COLUMNS)  # then the same status for all
                    columns, fixed = (_PLAIN_PAGE_COLUMNS, {"status": PageStatus.PENDING}) if plain else (_PAGE_COLUMNS, {})
                    bulk.insert("insert or ignore", "pages", columns, rows, {**fixed, "first_seen": stamp})
            _finish_links(conn, inventory, diff, stamp)
            conn.executemany(_SET_FACETS + " where url = ?", ((url,) for url in touched))
            # pages of an archive older than these columns (read from an index, not the large rows)
            conn.execute(_SET_FACETS + " where rowid in (select rowid from pages where seeds is null)")
            conn.executemany(
                "update pages set candidates = ?1 where url = ?2 and candidates is not ?1",
                [(json.dumps(candidates), url) for url, candidates in glued.items() if url in known],
            )
        return InventoryStats(
            links=len(inventory.links),
            pages=len(first),
            new_pages=len(new_urls),
            skipped=sum(1 for link in first.values() if link.skip_reason),
            removed_links=diff.removed,
        )

    def record_fetch(self, result: PageResult, *, had_capture: bool, extraction: Extraction | None = None) -> PageStatus | None:
        """One page's outcome, its attempts and its article, in one transaction. Returns the
        status it now has when the capture set it: DUPLICATE for an article archived before
        under another link (same final URL, or same canonical URL and title), kept once in
        the search index and the reading home."""
        stamp = now()
        final = result.final
        status: PageStatus | None = None
        original = None
        with self.db.atomic():
            was = self._status(result.url)
            _insert_many(
                self.db,
                "attempts",
                [
                    {
                        "url": result.url,
                        "request_url": a.url,
                        "final_url": a.final_url,
                        "started_at": datetime.fromtimestamp(a.started_at, UTC).isoformat(timespec="milliseconds"),
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
                status, original = self._identify(result.url, final.final_url, extraction.status if extraction else PageStatus.ARCHIVED, extraction)
                update |= {
                    "status": status,
                    "same_as": original,
                    "canonical": extraction.canonical if extraction else None,
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
            self._settle(result.url, final.final_url, was, status, original, extraction)
            if extraction is not None:
                self._save_extraction(result.url, extraction, index=original is None)
                if final.ok and final.status != 304:  # what the page's snapshot needs, fetched after: a stop resumes it
                    _update_page(self.db, result.url, {"stylesheets": json.dumps(extraction.stylesheets) if extraction.stylesheets else None})
            crash_point("commit")
        return status

    def save_extraction(self, url: str, extraction: Extraction) -> None:
        """Store a (re-)extraction of a captured page and re-index it."""
        self.save_extractions([(url, extraction)])

    def save_extractions(self, items: Iterable[tuple[str, Extraction]]) -> int:
        """Many re-extractions in one transaction. An article that now shows an image no
        page has archived gets its images fetched again by the next `mirror fetch`
        (`resources_at` cleared). Returns how many such pages there are."""
        images_due = 0
        with self.db.atomic():
            for url, extraction in items:
                duplicate = extraction.status == PageStatus.ARCHIVED and self._duplicate(url)
                if self._status(url) == PageStatus.ARCHIVED and extraction.status != PageStatus.ARCHIVED:
                    self._release(url)
                changed = {} if duplicate else {"same_as": None}  # (a duplicate no more: its original is gone)
                _update_page(self.db, url, {"status": PageStatus.DUPLICATE if duplicate else extraction.status, **changed})
                self._save_extraction(url, extraction, index=not duplicate)
                if duplicate:
                    continue
                if extraction.status == PageStatus.ARCHIVED and self._images_missing(url, extraction.images):
                    _update_page(self.db, url, {"resources_at": None})
                    images_due += 1
        return images_due

    def _duplicate(self, url: str) -> bool:
        """Whether a re-extracted page stays the duplicate it was (its original still archived)."""
        row = self.db.execute(
            "select 1 from pages p join pages o on o.url = p.same_as where p.url = ? and o.status = ?", [url, PageStatus.ARCHIVED]
        ).fetchone()
        return row is not None

    def _images_missing(self, page_url: str, images: list[str] | None) -> bool:
        """Whether the article shows an image never asked for: archived by no page, and not
        tried for this one (one that failed for good, a 404, is not asked for again)."""
        known = "select 1 from resources where url = ? and (status = ? or page_url = ?) limit 1"
        return any(self.db.execute(known, [image, ResourceStatus.ARCHIVED, page_url]).fetchone() is None for image in images or ())

    def _original(self, url: str, final_url: str, extraction: Extraction | None) -> str | None:
        """The archived page (another link's) that this capture is the same article as: for a
        page that redirected, the one at the address it ended at; else the one the canonical
        URL it declares names (a claim: believed from the same site, with the same title and text). A page at
        its own address is nobody's duplicate by its final URL (`_adopt` makes it the original)."""
        from ..urls import normalize

        if normalize(final_url) != url:
            row = self.db.execute(
                "select url from pages where url != :url and status = :archived and (url = :final_normalized or final_url = :final) "
                "order by url = :final_normalized desc, id limit 1",
                {"url": url, "archived": PageStatus.ARCHIVED, "final": final_url, "final_normalized": normalize(final_url)},
            ).fetchone()
            if row is not None:
                return row[0]
        if extraction is None or not extraction.canonical or not extraction.title or not _same_site(final_url, extraction.canonical):
            return None
        canonical = extraction.canonical
        for other, other_final, text in self.db.execute(
            "select url, final_url, text from pages where url != :url and status = :archived and title = :title "
            "and (url = :canonical or final_url = :canonical or canonical = :canonical) order by url = :canonical desc, id limit 20",
            {"url": url, "archived": PageStatus.ARCHIVED, "canonical": canonical, "title": extraction.title},
        ):
            if _same_site(other_final or other, canonical) and _same_text(text, extraction.text):
                return other
        return None

    def _identify(self, url: str, final_url: str, status: PageStatus, extraction: Extraction | None) -> tuple[PageStatus, str | None]:
        """A capture's status and its original: an article archived before under another link
        makes this one its DUPLICATE."""
        original = self._original(url, final_url, extraction) if status == PageStatus.ARCHIVED else None
        return (PageStatus.DUPLICATE if original is not None else status), original

    def _settle(self, url: str, final_url: str, was: str | None, status: PageStatus | None, original: str | None,
                extraction: Extraction | None) -> None:
        """After a page's new status: an article is the original of those it is the address of;
        a page that stopped being one hands its duplicates on."""
        if status == PageStatus.ARCHIVED:
            self._adopt(url, final_url, extraction)
        elif was == PageStatus.ARCHIVED and status is not None:
            self._release(url, original)

    def _adopt(self, url: str, final_url: str, extraction: Extraction | None) -> None:
        """A page that is the article's own address (no redirect) is the original, whichever
        link was recorded first: the pages archived before that end at it, or that declare it
        canonical with its title and text (`_same_site`, `_same_text`), become its duplicates."""
        from ..urls import normalize

        if normalize(final_url) != url:
            return
        others = [row[0] for row in self.db.execute(
            "select url from pages where url != :url and status = :archived and final_url = :final",
            {"url": url, "final": final_url, "archived": PageStatus.ARCHIVED},
        )]
        if extraction is not None and extraction.title:
            others += [other for other, other_final, text in self.db.execute(
                "select url, final_url, text from pages where url != :url and status = :archived and canonical = :url and title = :title "
            "order by id limit 20",
                {"url": url, "archived": PageStatus.ARCHIVED, "title": extraction.title},
            ) if other not in others and _same_site(other_final or other, url) and _same_text(text, extraction.text)]
        for other in others:
            _update_page(self.db, other, {"status": PageStatus.DUPLICATE, "same_as": url})
            self.db.execute(f"delete from {_fts.FTS_TABLE} where rowid = (select id from pages where url = ?)", [other])
        if others:  # the duplicates of those are this page's now
            self.db.conn.executemany("update pages set same_as = ? where same_as = ?", [(url, other) for other in others])
        self.adopted += others

    def _status(self, url: str) -> str | None:
        row = self.db.execute("select status from pages where url = ?", [url]).fetchone()
        return row[0] if row else None

    def _release(self, url: str, original: str | None = None) -> None:
        """`url` is no longer an archived article (re-fetched as no text, re-extracted): its
        duplicates are not hidden behind it. The first becomes the original, indexed again, and
        the others its duplicates. (`url` is now a duplicate of `original`: they are that one's.)"""
        heirs = [row[0] for row in self.db.execute(
            "select url from pages where same_as = ? and status = ? order by id", [url, PageStatus.DUPLICATE])]
        if not heirs:
            return
        if original is not None:
            self.db.execute("update pages set same_as = ? where same_as = ?", [original, url])
            return
        heir, rest = heirs[0], heirs[1:]
        _update_page(self.db, heir, {"status": PageStatus.ARCHIVED, "same_as": None})
        reindex_rows(self.db, urls=[heir])
        self.released.append(heir)
        self.db.conn.executemany("update pages set same_as = ? where url = ?", [(heir, other) for other in rest])

    def _save_extraction(self, url: str, extraction: Extraction, *, index: bool = True) -> None:
        row = extraction.as_row()
        values = {column: row[column] for column in EXTRACTED_COLUMNS}
        _update_page(self.db, url, {**values, "extracted_at": now()})
        page_id = self.db.execute("select id from pages where url = ?", [url]).fetchone()[0]
        self.db.execute(f"delete from {_fts.FTS_TABLE} where rowid = ?", [page_id])
        if extraction.status == PageStatus.ARCHIVED and index:
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
    ) -> PageStatus | None:
        """A browser capture's outcome, its article (when it won) and its images, in one transaction.
        Returns the status the page now has when the article won: DUPLICATE for one archived
        before under another link, as `record_fetch` decides.

        Not `done` (the browser crashed): the page is rendered again on the next run.
        """
        status, original = None, None
        final_url = str(values.get("final_url") or url)
        with self.db.atomic():
            was = self._status(url)
            update = {**values, "rendered_at": now() if done else None}
            if extraction is not None and values.get("status"):
                status, original = self._identify(url, final_url, PageStatus(values["status"]), extraction)
                update |= {"status": status, "same_as": original, "canonical": extraction.canonical}
            _update_page(self.db, url, update)
            self._settle(url, final_url, was, status, original, extraction)
            if extraction is not None:
                self._save_extraction(url, extraction, index=original is None)
                self.record_resources(url, images)
            crash_point("render_commit")
        return status

    def record_resources(self, page_url: str, exchanges: list[Exchange]) -> None:
        """A page's resources and that they are done, in one transaction (plain SQL:
        sqlite-utils' upsert inspects the table on every call, milliseconds per image).
        A deferred one (its host name had no answer when the run ended) is not recorded, and
        the page's resources are not done: the next run asks for them."""
        stamp = now()
        rows = []
        deferred = False
        for exchange in exchanges:
            if exchange.error == Reason.DEFERRED:
                deferred = True
                continue
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
            if not deferred:
                _update_page(self.db, page_url, {"resources_at": stamp})

    def reset_pending(self, urls: list[str]) -> int:
        """Pages a run marked failed for a name that did not resolve while the network was
        down: pending again (they were never really tried). Returns how many."""
        with self.db.atomic():
            cursor = self.db.conn.executemany(
                "update pages set status = ?, error = null, error_message = null where url = ? and status = ? and error = ?",
                [(PageStatus.PENDING, url, PageStatus.FAILED, Reason.DNS) for url in urls],
            )
        return max(0, cursor.rowcount)

    def dead_names(self) -> dict[str, float]:
        """Host names an earlier run found not to exist, until when to believe it (time.time())."""
        rows = self.db.execute("select name, until from dead_names where until > ?", [time.time()]).fetchall()
        return dict(rows)

    def record_dead_names(self, names: dict[str, float]) -> None:
        if names:
            with self.db.atomic():
                _insert_many(self.db, "dead_names", [{"name": n, "until": u} for n, u in names.items()], verb="insert or replace")


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
_link_values = operator.attrgetter(*_LINK_COLUMNS[1:])  # a links row but its seed, in that order
_link_update_values = operator.attrgetter("url", "url_as_written", "title", "section", "seed", "line", "col")
_UPDATE_LINK = "update links set url = ?, url_as_written = ?, title = ?, section = ? where seed = ? and line = ? and col = ?"
_PAGE_COLUMNS = ("url", "host", "status", "error", "error_message", "candidates", "id", "seeds", "sections")  # and first_seen
_PLAIN_PAGE_COLUMNS = ("url", "host", "id", "seeds", "sections")  # a pending page: no error, no repairs
# a page's seed files and sections, in the order their links were written (the links.url index's order)
_SET_FACETS = """update pages set
    seeds = (select json_group_array(distinct seed) from links where links.url = pages.url),
    sections = (select json_group_array(distinct section) from links where links.url = pages.url and section is not null)"""


class _LinkDiff(NamedTuple):
    removed: int
    inserted: list[Link]
    changed: list[Link]
    touched: set[str]  # pages whose other links changed
    counts: Counter[str]  # links per seed


def _diff_links(conn: sqlite3.Connection, inventory: Inventory) -> _LinkDiff:
    """What it takes to bring the links rows of the seeds read up to `inventory`
    (the rows no longer there are deleted here, before new rows could take their rowids)."""
    # one row per (seed, line, col): the last link written there wins, as an upsert would
    final = {(link.seed, link.line, link.col): link for link in inventory.links}
    existing = _link_rows(conn, dict.fromkeys([*inventory.seeds, *(key[0] for key in final)]))
    read = set(inventory.seeds) - {COMMAND_LINE}  # command-line links stay until removed by hand
    stale = [key for key in existing if key[0] in read and key not in final]
    conn.executemany("delete from links where seed = ? and line = ? and col = ?", stale)
    touched = {existing[key][0] for key in stale}
    inserted, changed = [], []
    for key, link in final.items():
        old = existing.get(key)
        if old is None:
            inserted.append(link)
        elif old != (link.url, link.url_as_written, link.title, link.section):
            changed.append(link)
            touched.update((old[0], link.url))
    return _LinkDiff(len(stale), inserted, changed, touched, Counter(key[0] for key in final))


def _finish_links(conn: sqlite3.Connection, inventory: Inventory, diff: _LinkDiff, stamp: str) -> None:
    """The links rows that changed, and what each seed read holds now."""
    conn.executemany(_UPDATE_LINK, map(_link_update_values, diff.changed))
    counts = diff.counts
    conn.executemany(
        "insert into seeds (seed, links, read_at) values (?, ?, ?) "
        "on conflict (seed) do update set links = excluded.links, read_at = excluded.read_at",
        [(seed, counts[seed], stamp) for seed in inventory.seeds if seed != COMMAND_LINE],
    )


def _drop_indexes(conn: sqlite3.Connection, table: str, adding: int) -> list[str]:
    """Drop `table`'s own indexes when the `adding` rows about to go in outnumber those there;
    returns the statements that build them again, to run once the rows are in.

    Sorting once is cheaper than a random B-tree insert per row (a third of a fresh
    inventory's time). In the caller's transaction: an error leaves the indexes as they were.
    """
    if adding < 10_000 or adding <= conn.execute(f"select coalesce(max(rowid), 0) from [{table}]").fetchone()[0]:
        return []
    indexes = conn.execute(
        "select name, sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null", [table]
    ).fetchall()
    for name, _ in indexes:
        conn.execute(f"drop index [{name}]")
    return [sql for _, sql in indexes]


def _link_rows(conn: sqlite3.Connection, seeds: Iterable[str]) -> dict[tuple[str, int, int], tuple]:
    """(seed, line, col) -> (url, url_as_written, title, section) of the links recorded for `seeds`."""
    rows = {}
    for seed in seeds:
        for line, col, *values in conn.execute(
            "select line, col, url, url_as_written, title, section from links where seed = ?", [seed]
        ):
            rows[(seed, line, col)] = tuple(values)
    return rows


def _new_page_facets(inserted: list[Link], known: set[str], touched: set[str]) -> dict[str, tuple[tuple, tuple]]:
    """`seeds` and `sections` of each new page, as `_SET_FACETS` would find them.

    Its links rows are the ones just inserted, in this order, unless an older
    row now points to it too: then it is left to `_SET_FACETS` (it is in `touched`).
    Known pages that got a link are added to `touched`.
    """
    facets: dict[str, tuple[tuple, tuple]] = {}
    alone: dict[tuple, tuple[tuple, tuple]] = {}  # (seed, section) -> the facets of a page with that one link
    for link in inserted:
        url = link.url
        if url in known:
            touched.add(url)
            continue
        seed, section = where = link.seed, link.section
        had = facets.get(url)
        if had is None:  # most pages have one link: their facets are shared tuples
            facets[url] = alone.get(where) or alone.setdefault(where, ((seed,), () if section is None else (section,)))
            continue
        seeds, sections = had
        if seed not in seeds:
            seeds += (seed,)
        if section is not None and section not in sections:
            sections += (section,)
        facets[url] = seeds, sections
    for url in touched.intersection(facets):
        facets[url] = None, None
    return facets


class _JsonArrays(dict):
    """tuple -> the JSON array SQLite's json_group_array spells for it, one query per distinct
    tuple (on a connection of its own: the archive's is busy with the bulk inserts)."""

    def __init__(self) -> None:
        super().__init__({None: None})
        self.conn = sqlite3.connect(":memory:")

    def __missing__(self, items: tuple) -> str:
        query = "select json_group_array(value) from json_each(?)"
        made = self[items] = self.conn.execute(query, [json.dumps(items)]).fetchone()[0]
        return made

    def close(self) -> None:
        self.conn.close()


def _glued_candidates(links: list[Link]) -> dict[str, list[str]]:
    """The repairs of glued URLs of each page, in the order its links list them."""
    glued: dict[str, list[str]] = {}
    for link in links:
        if link.candidates:
            seen = glued.setdefault(link.url, [])
            seen.extend(c for c in link.candidates if c not in seen)
    return glued


def _page_rows(
    urls: list[str], first: dict[str, Link], glued: dict[str, list[str]], facets: dict[str, tuple], next_id: int
) -> Iterator[tuple]:
    """The new pages' values: `_PLAIN_PAGE_COLUMNS` for a pending page without glued-URL
    repairs (nearly every one), else `_PAGE_COLUMNS`."""
    no_facets = (None, None)
    with closing(_JsonArrays()) as json_array:
        for page_id, url in enumerate(urls, next_id):
            link = first[url]
            seeds, sections = facets.get(url, no_facets)
            seeds, sections = json_array[seeds], json_array[sections]
            if link.skip_reason is None and url not in glued:
                yield url, _host(url), page_id, seeds, sections
                continue
            problem = None
            if link.skip_reason:  # seeds classified every link already: only a skipped one needs its message
                from ..urls import classify  # (courlan: not loaded for search and show)

                problem = classify(link.url_as_written)
            candidates = json.dumps(glued[url]) if url in glued else None
            if problem is None and candidates is None:
                yield url, _host(url), page_id, seeds, sections
            elif problem is None:
                yield url, _host(url), PageStatus.PENDING, None, None, candidates, page_id, seeds, sections
            else:
                yield url, None, PageStatus.SKIPPED, problem[0], problem[1], candidates, page_id, seeds, sections


_PLAIN_HOST = re.compile(r"https?://([a-z0-9.\-]+)(?::[0-9]*)?(?=[/?#]|\Z)")  # as `normalize` writes most URLs


def _host(url: str) -> str | None:
    """urlsplit(url).hostname, with fast paths for the plain `scheme://host[:port]/…` of a normalized URL."""
    plain = _PLAIN_HOST.match(url)
    if plain is not None:
        return plain[1]
    netloc = url.partition("://")[2].partition("/")[0].partition("?")[0].partition("#")[0]
    if not netloc or "@" in netloc or "[" in netloc or "%" in netloc:
        return urlsplit(url).hostname
    return netloc.partition(":")[0].lower() or None


def _site(url: str) -> str:
    """A URL's site, near enough: its host without `www.`, `m.`, `amp.` or `mobile.`."""
    host = (urlsplit(url).hostname or "").lower()
    for prefix in ("www.", "m.", "amp.", "mobile."):
        if host.startswith(prefix):
            return host[len(prefix):]
    return host


def _same_site(url: str, canonical: str) -> bool:
    """Whether a page may speak for `canonical`: only a page of the canonical URL's own site
    (a page elsewhere declaring another site's URL is not believed)."""
    return _site(url) == _site(canonical)


SHINGLE = 8  # characters: a run this long is rarely shared by two different texts, Chinese or English
SAME_TEXT = 0.75  # of the two texts' runs (first 5,000 characters), shared: one article, edited a little


def _same_text(a: str | None, b: str | None) -> bool:
    """Whether two extracted texts are one article's (whitespace aside, SAME_TEXT of their
    8-character runs shared; linear time, a millisecond or two): a canonical URL and a title
    are claims a page makes, and the second page of a series claims the first's."""
    a, b = " ".join((a or "").split()), " ".join((b or "").split())
    if a == b:
        return True
    if not a or not b or min(len(a), len(b)) < 0.8 * max(len(a), len(b)):
        return False
    mine, theirs = _shingles(a), _shingles(b)
    return len(mine & theirs) >= SAME_TEXT * len(mine | theirs)


@functools.lru_cache(maxsize=64)
def _shingles(text: str) -> frozenset[str]:
    text = text[:5000]
    return frozenset(text[i:i + SHINGLE] for i in range(max(1, len(text) - SHINGLE + 1)))
