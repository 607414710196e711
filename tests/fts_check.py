"""The contentless search index checked against the pages it indexes (issue 29).

The index keeps no copy of its text, so a page leaves it only when given the values it went in
with (`mirror._fts.unindex_page`). These read back what the index holds, token by token, and
compare it with an index built afresh from the `pages` rows: any write that changed an indexed
row without re-indexing it, or took a page out with other values, shows as a difference."""

from __future__ import annotations

import sqlite3

from mirror._fts import FTS_COLUMNS, FTS_TABLE, INDEX_COLUMNS
from mirror._types import PageStatus
from mirror._util.segment import index_values


def postings(conn: sqlite3.Connection, table: str = FTS_TABLE, schema: str = "main") -> set[tuple]:
    """(term, rowid, column, offset) of every token the index holds."""
    conn.execute(f"create virtual table if not exists temp.v_{schema} using fts5vocab({schema}, {table}, instance)")
    try:
        return set(conn.execute(f"select term, doc, col, offset from temp.v_{schema}"))
    finally:
        conn.execute(f"drop table temp.v_{schema}")


def indexed_values(conn: sqlite3.Connection, page_id: int) -> set[tuple]:
    """The postings of one page."""
    return {p for p in postings(conn) if p[1] == page_id}


def expected_postings(conn: sqlite3.Connection) -> set[tuple]:
    """What the index should hold: every archived page with text, indexed from its row."""
    fresh = sqlite3.connect(":memory:")
    fresh.execute(f"create virtual table {FTS_TABLE} using fts5({', '.join(INDEX_COLUMNS)}, content='', tokenize = 'unicode61 remove_diacritics 2')")
    rows = conn.execute(f"select id, {', '.join(FTS_COLUMNS)} from pages where status = ? and text is not null", [PageStatus.ARCHIVED])
    for page_id, *values in rows:
        fresh.execute(
            f"insert into {FTS_TABLE} (rowid, {', '.join(INDEX_COLUMNS)}) values (?, {', '.join('?' for _ in INDEX_COLUMNS)})",
            [page_id, *index_values(*values)],
        )
    return postings(fresh)


def assert_index_matches_pages(db) -> None:
    conn = getattr(db, "conn", db)
    held, expected = postings(conn), expected_postings(conn)
    assert held == expected, f"index differs from pages: {len(held - expected)} postings extra, {len(expected - held)} missing"
