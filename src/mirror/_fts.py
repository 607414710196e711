"""The search index's layout: an FTS5 table over the pages' searchable columns, whose content is `pages`.

Index-time only (the store writes with it); queries live in `mirror.search`, and how CJK
text is made searchable (single characters and bigrams as tokens) in `mirror._util.segment`.

The index keeps no copy of what it indexes: the text is in `pages` already, and a second,
segmented copy doubled the database. It is declared an external-content table of `pages`
(`content="pages"`, its rowid the page's rowid, which is kept equal to `pages.id`), because that
is how the ecosystem's tools find a table's index: `sqlite-utils search mirror.db pages 税收`,
datasette's `_search` without our plugin and datasette-search-all read `content="pages"` and join
on `pages.rowid` (a contentless table made them say "not configured for full-text search", or,
datasette, list every row). What they type is tokenized by unicode61 alone, so English words and
1- and 2-character Chinese words (one character; one bigram token) are found there; longer words
are phrases of bigrams (docs/clients.md). The segmented title and text, and the bigram columns,
are not the text of `pages`: FTS5 reads a row of the table from `pages` (`select * from
pages_fts`, a dump), where `title2` and `body2` are generated columns that are always NULL (they
take no room), so such reads work but show the unsegmented text. FTS5's 'rebuild' (sqlite-utils'
`rebuild-fts`) would index that raw text and lose exact Chinese search: `mirror reindex` mends it.

So a page leaves the index by the FTS5 'delete' command, given the very values it was indexed
with: `index_values` of its row, which stays as indexed (only `index_page` changes an indexed
page's title, text, author or sitename). A change to `index_values` itself needs a migration that
rebuilds the index. Which pages are in the index is read from its `_docsize` table: a lookup by
rowid on an external-content table reads `pages`, whatever the index holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.segment import index_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["FTS_COLUMNS", "FTS_TABLE", "INDEXED", "INDEX_COLUMNS", "ensure_index", "index_insert", "index_page", "unindex_page"]

FTS_TABLE = "pages_fts"
FTS_COLUMNS = ("title", "text", "author", "sitename")  # the pages columns searched
BIGRAM_COLUMNS = ("title2", "body2")  # CJK bigrams of the title; of text, author and sitename
INDEX_COLUMNS = FTS_COLUMNS + BIGRAM_COLUMNS  # the order of `index_values`
_COLUMNS, _MARKS = ", ".join(INDEX_COLUMNS), ", ".join("?" for _ in INDEX_COLUMNS)
INDEXED = f"{FTS_TABLE}_docsize"  # one row per indexed page (`id` = its rowid): FTS5's own shadow table
_CONTENT = 'content="pages"'  # as sqlite-utils and datasette look for it (single quotes they do not see)


def index_insert(page_id: int, row: dict, values: tuple[str, ...] | None = None) -> tuple[str, list]:
    """SQL that indexes a page, rowid = pages.id: `values` as `index_values` makes them
    (an extraction worker made them already), else made here from the row."""
    return f"insert into {FTS_TABLE} (rowid, {_COLUMNS}) values (?, {_MARKS})", [page_id, *(values or _values(row))]


def _values(row: dict) -> tuple[str, ...]:
    return index_values(*(row.get(column) for column in FTS_COLUMNS))


def is_indexed(db: sqlite_utils.Database, page_id: int) -> bool:
    return db.execute(f"select 1 from {INDEXED} where id = ?", [page_id]).fetchone() is not None


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
    have = {row[1] for row in db.execute("pragma table_xinfo(pages)")}
    for column in BIGRAM_COLUMNS:  # what FTS5 reads of them from its content table: nothing, in no room
        if column not in have:
            db.execute(f"alter table pages add column {column} text generated always as (null) virtual")
    if db[FTS_TABLE].exists():
        sql = db.execute("select sql from sqlite_master where name = ?", [FTS_TABLE]).fetchone()[0] or ""
        if [c.name for c in db[FTS_TABLE].columns] == list(INDEX_COLUMNS) and _CONTENT in sql.replace(" ", ""):
            return False
        db.execute(f"drop table {FTS_TABLE}")
    db.execute(f"create virtual table {FTS_TABLE} using fts5({', '.join(INDEX_COLUMNS)}, {_CONTENT}, tokenize = 'unicode61 remove_diacritics 2')")
    return True
