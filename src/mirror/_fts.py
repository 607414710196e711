"""The search index's layout: an FTS5 table over the pages' searchable columns.

Index-time only (the store writes with it); queries live in `mirror.search`, and how CJK
text is made searchable (single characters and bigrams as tokens) in `mirror._util.segment`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.segment import index_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["FTS_COLUMNS", "FTS_TABLE", "INDEX_COLUMNS", "ensure_index", "index_insert"]

FTS_TABLE = "pages_fts"
FTS_COLUMNS = ("title", "text", "author", "sitename")  # the pages columns searched
BIGRAM_COLUMNS = ("title2", "body2")  # CJK bigrams of the title; of text, author and sitename
INDEX_COLUMNS = FTS_COLUMNS + BIGRAM_COLUMNS  # the order of `index_values`


def index_insert(page_id: int, row: dict, values: tuple[str, ...] | None = None) -> tuple[str, list]:
    """SQL that indexes a page, rowid = pages.id: `values` as `index_values` makes them
    (an extraction worker made them already), else made here from the row."""
    columns = ", ".join(INDEX_COLUMNS)
    marks = ", ".join("?" for _ in INDEX_COLUMNS)
    if values is None:
        values = index_values(*(row.get(column) for column in FTS_COLUMNS))
    return f"insert into {FTS_TABLE} (rowid, {columns}) values (?, {marks})", [page_id, *values]


def ensure_index(db: sqlite_utils.Database) -> bool:
    """Create the index if missing (or of an older layout); True if it was (re)created empty."""
    if db[FTS_TABLE].exists():
        if [c.name for c in db[FTS_TABLE].columns] == list(INDEX_COLUMNS):
            return False
        db.execute(f"drop table {FTS_TABLE}")
    db.execute(
        f"create virtual table {FTS_TABLE} using fts5("
        f"{', '.join(INDEX_COLUMNS)}, tokenize = 'unicode61 remove_diacritics 2')"
    )
    return True
