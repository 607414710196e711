"""The search index's layout: a contentless FTS5 table over the pages' searchable columns.

Index-time only (the store writes with it); queries live in `mirror.search`, and how CJK
text is made searchable (single characters and bigrams as tokens) in `mirror._util.segment`.

The index keeps no copy of what it indexes (`content=''`): the text is in `pages` already, and a
second, segmented copy doubled the database. So a page leaves the index by the FTS5 'delete'
command, given the very values it was indexed with: `index_values` of its row, which stays as
indexed (only `index_page` changes an indexed page's title, text, author or sitename). A change
to `index_values` itself needs a migration that rebuilds the index. (SQLite 3.43's
`contentless_delete` would spare this, but Debian 12's Python has 3.40, and datasette must read it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.segment import index_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["FTS_COLUMNS", "FTS_TABLE", "INDEX_COLUMNS", "ensure_index", "index_insert", "index_page", "unindex_page"]

FTS_TABLE = "pages_fts"
FTS_COLUMNS = ("title", "text", "author", "sitename")  # the pages columns searched
BIGRAM_COLUMNS = ("title2", "body2")  # CJK bigrams of the title; of text, author and sitename
INDEX_COLUMNS = FTS_COLUMNS + BIGRAM_COLUMNS  # the order of `index_values`
_COLUMNS, _MARKS = ", ".join(INDEX_COLUMNS), ", ".join("?" for _ in INDEX_COLUMNS)


def index_insert(page_id: int, row: dict, values: tuple[str, ...] | None = None) -> tuple[str, list]:
    """SQL that indexes a page, rowid = pages.id: `values` as `index_values` makes them
    (an extraction worker made them already), else made here from the row."""
    return f"insert into {FTS_TABLE} (rowid, {_COLUMNS}) values (?, {_MARKS})", [page_id, *(values or _values(row))]


def _values(row: dict) -> tuple[str, ...]:
    return index_values(*(row.get(column) for column in FTS_COLUMNS))


def is_indexed(db: sqlite_utils.Database, page_id: int) -> bool:
    return db.execute(f"select 1 from {FTS_TABLE} where rowid = ?", [page_id]).fetchone() is not None


def unindex_page(db: sqlite_utils.Database, page_id: int, row: dict | None = None) -> bool:
    """Take a page out of the index (if it is in), with `row` its indexed columns (read from
    `pages` when not given). True if it was in."""
    if not is_indexed(db, page_id):
        return False
    if row is None:
        row = next(db.query(f"select {', '.join(FTS_COLUMNS)} from pages where id = ?", [page_id]), None) or {}
    db.execute(f"insert into {FTS_TABLE} ({FTS_TABLE}, rowid, {_COLUMNS}) values ('delete', ?, {_MARKS})", [page_id, *_values(row)])
    return True


def index_page(db: sqlite_utils.Database, page_id: int, old: dict | None, new: dict | None, values: tuple[str, ...] | None = None) -> None:
    """The page's index entry brought from its `old` row (None: read it) to `new` (None: out of
    the index); call it before `pages` holds the new values, which is how the old ones are known."""
    unindex_page(db, page_id, old)
    if new is not None:
        db.execute(*index_insert(page_id, new, values))


def ensure_index(db: sqlite_utils.Database) -> bool:
    """Create the index if missing (or of an older layout); True if it was (re)created empty."""
    if db[FTS_TABLE].exists():
        sql = db.execute("select sql from sqlite_master where name = ?", [FTS_TABLE]).fetchone()[0] or ""
        if [c.name for c in db[FTS_TABLE].columns] == list(INDEX_COLUMNS) and "content=''" in sql.replace(" ", ""):
            return False
        db.execute(f"drop table {FTS_TABLE}")
    db.execute(f"create virtual table {FTS_TABLE} using fts5({', '.join(INDEX_COLUMNS)}, content='', tokenize = 'unicode61 remove_diacritics 2')")
    return True
