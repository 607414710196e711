"""The inventory's writes: the links of the seeds just read, and the pages they name, in one transaction.

At 1e6 links per-row work is all the time there is: only the link rows that changed are written,
new rows go in through `BulkWriter` (a second thread), and the new pages' facets are worked out
here rather than by a query per page.
"""

from __future__ import annotations

import json
import operator
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from .._types import ADDED_SEED, COMMAND_LINE, Link, PageStatus
from .._util.gc import gc_paused
from ._bulk import BulkWriter
from .folder import now
from .schema import SET_LINK_TAGS, next_page_id

if TYPE_CHECKING:
    import sqlite_utils

    from ..seeds.documents import Inventory

__all__ = ["SET_FACETS", "InventoryStats", "InventoryWrites"]


@dataclass(frozen=True)
class InventoryStats:
    links: int
    pages: int
    new_pages: int
    skipped: int
    removed_links: int


class InventoryWrites:
    """The inventory's writes of an `Archive` (mixed into `RowWriters`)."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    conn: sqlite3.Connection

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
            conn.executemany(SET_FACETS + " where url = ?", ((url,) for url in touched))
            tagged = touched.union(link.url for link in inserted if link.tags)  # (new links with tags, and what changed)
            conn.executemany(SET_LINK_TAGS + " where url = ?", ((url,) for url in tagged))
            # pages of an archive older than these columns (read from an index, not the large rows)
            conn.execute(SET_FACETS + " where rowid in (select rowid from pages where seeds is null)")
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


_LINK_COLUMNS = ("seed", "line", "col", "url", "url_as_written", "title", "section", "tags", "added")
_link_values = operator.attrgetter(*_LINK_COLUMNS[1:])  # a links row but its seed, in that order
_link_update_values = operator.attrgetter("url", "url_as_written", "title", "section", "tags", "added", "seed", "line", "col")
_UPDATE_LINK = "update links set url = ?, url_as_written = ?, title = ?, section = ?, tags = ?, added = ? where seed = ? and line = ? and col = ?"
# a page's rowid is its id: the search index's rowid, which tools outside mirror join on (`mirror._fts`)
_PAGE_COLUMNS = ("url", "host", "status", "error", "error_message", "candidates", "id", "rowid", "seeds", "sections")  # and first_seen
_PLAIN_PAGE_COLUMNS = ("url", "host", "id", "rowid", "seeds", "sections")  # a pending page: no error, no repairs
# a page's seed files and sections, in the order their links were written (the links.url index's order)
SET_FACETS = """update pages set
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
    read = set(inventory.seeds) - {COMMAND_LINE, ADDED_SEED}  # command-line and added links stay until removed by hand
    stale = [key for key in existing if key[0] in read and key not in final]
    conn.executemany("delete from links where seed = ? and line = ? and col = ?", stale)
    touched = {existing[key][0] for key in stale}
    inserted, changed = [], []
    for key, link in final.items():
        old = existing.get(key)
        if old is None:
            inserted.append(link)
        elif old != (link.url, link.url_as_written, link.title, link.section, link.tags, link.added):
            changed.append(link)
            touched.update((old[0], link.url))
    return _LinkDiff(len(stale), inserted, changed, touched, Counter(key[0] for key in final))


def _finish_links(conn: sqlite3.Connection, inventory: Inventory, diff: _LinkDiff, stamp: str) -> None:
    """The links rows that changed, and what each seed read holds now."""
    conn.executemany(_UPDATE_LINK, map(_link_update_values, diff.changed))
    counts = diff.counts
    conn.executemany(
        "insert into seeds (seed, links, read_at, title) values (?, ?, ?, ?) "
        "on conflict (seed) do update set links = excluded.links, read_at = excluded.read_at, title = excluded.title",
        [(seed, counts[seed], stamp, inventory.titles.get(seed)) for seed in inventory.seeds if seed not in (COMMAND_LINE, ADDED_SEED)],
    )


def _drop_indexes(conn: sqlite3.Connection, table: str, adding: int) -> list[str]:
    """Drop `table`'s own indexes when the `adding` rows about to go in outnumber those there;
    returns the statements that build them again, to run once the rows are in.

    Sorting once is cheaper than a random B-tree insert per row (a third of a fresh
    inventory's time). In the caller's transaction: an error leaves the indexes as they were.
    """
    if adding < 10_000 or adding <= conn.execute(f"select coalesce(max(rowid), 0) from [{table}]").fetchone()[0]:
        return []
    indexes = conn.execute("select name, sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null", [table]).fetchall()
    for name, _ in indexes:
        conn.execute(f"drop index [{name}]")
    return [sql for _, sql in indexes]


_LinkKey = tuple[str, int, int]  # a link's place: seed, line, col
_LinkValues = tuple[str, str, str | None, str | None, str | None, str | None]  # url, url_as_written, title, section, tags, added
_Names = tuple[str, ...]  # a page's seeds, or its sections


def _link_rows(conn: sqlite3.Connection, seeds: Iterable[str]) -> dict[_LinkKey, _LinkValues]:
    """(seed, line, col) -> (url, url_as_written, title, section, tags, added) of the links recorded for `seeds`."""
    rows: dict[_LinkKey, _LinkValues] = {}
    for seed in seeds:
        for line, col, url, written, title, section, tags, added in conn.execute(
            "select line, col, url, url_as_written, title, section, tags, added from links where seed = ?", [seed]
        ):
            rows[(seed, line, col)] = url, written, title, section, tags, added
    return rows


def _new_page_facets(inserted: list[Link], known: set[str], touched: set[str]) -> dict[str, tuple[_Names, _Names]]:
    """`seeds` and `sections` of each new page, as `SET_FACETS` would find them.

    Its links rows are the ones just inserted, in this order, unless an older
    row now points to it too: then it is left to `SET_FACETS` (it is in `touched`).
    Known pages that got a link are added to `touched`.
    """
    facets: dict[str, tuple[_Names, _Names]] = {}
    alone: dict[tuple[str, str | None], tuple[_Names, _Names]] = {}  # (seed, section) -> the facets of a page with that one link
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
        del facets[url]  # (no facets: `SET_FACETS` finds them)
    return facets


class _JsonArrays(dict[_Names | None, str | None]):
    """tuple -> the JSON array SQLite's json_group_array spells for it, one query per distinct
    tuple (on a connection of its own: the archive's is busy with the bulk inserts)."""

    def __init__(self) -> None:
        super().__init__({None: None})
        self.conn = sqlite3.connect(":memory:")

    def __missing__(self, items: _Names | None) -> str:
        query = "select json_group_array(value) from json_each(?)"
        made: str
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
    urls: list[str], first: dict[str, Link], glued: dict[str, list[str]], facets: dict[str, tuple[_Names, _Names]], next_id: int
) -> Iterator[tuple[object, ...]]:
    """The new pages' values: `_PLAIN_PAGE_COLUMNS` for a pending page without glued-URL
    repairs (nearly every one), else `_PAGE_COLUMNS`."""
    no_facets: tuple[None, None] = (None, None)
    with closing(_JsonArrays()) as json_array:
        for page_id, url in enumerate(urls, next_id):
            link = first[url]
            seeds, sections = facets.get(url, no_facets)
            seeds_json, sections_json = json_array[seeds], json_array[sections]
            if link.skip_reason is None and url not in glued:
                yield url, _host(url), page_id, page_id, seeds_json, sections_json
                continue
            problem = None
            if link.skip_reason:  # seeds classified every link already: only a skipped one needs its message
                from ..urls import (
                    classify,  # (courlan: not loaded for search and show)
                )

                problem = classify(link.url_as_written)
            candidates = json.dumps(glued[url]) if url in glued else None
            if problem is None and candidates is None:
                yield url, _host(url), page_id, page_id, seeds_json, sections_json
            elif problem is None:
                yield url, _host(url), PageStatus.PENDING, None, None, candidates, page_id, page_id, seeds_json, sections_json
            else:
                yield url, None, PageStatus.SKIPPED, problem[0], problem[1], candidates, page_id, page_id, seeds_json, sections_json


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
