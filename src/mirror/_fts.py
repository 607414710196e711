"""The search index's layout and what goes into it: CJK text made searchable by plain FTS5.

Index-time only (the store writes with it); queries live in `mirror.search`.
SQLite's unicode61 tokenizer sees a run of Han characters as one token and
trigram misses two-character words, so every CJK character becomes its own
token (zero-width spaces around it, a barrier token where two were not
adjacent), and two more columns hold CJK bigrams (see `mirror.search`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["FTS_COLUMNS", "FTS_TABLE", "INDEX_COLUMNS", "bigrams", "desegment", "ensure_index", "index_insert", "segment"]

FTS_TABLE = "pages_fts"
FTS_COLUMNS = ("title", "text", "author", "sitename")  # the pages columns searched
BIGRAM_COLUMNS = ("title2", "body2")  # CJK bigrams of the title; of text, author and sitename
INDEX_COLUMNS = FTS_COLUMNS + BIGRAM_COLUMNS
ZWSP = "\u200b"
BARRIER = "\ue000"  # private-use: unicode61 keeps it as a token of its own
CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
CJK = re.compile(f"[{CJK_CLASS}]")
_CJK_RUN = re.compile(f"[{CJK_CLASS}]{{2,}}")
_CJK_GAP = re.compile(f"(?<=[{CJK_CLASS}])([^{CJK_CLASS}\\w]+)(?=[{CJK_CLASS}])")


def segment(text: str | None) -> str:
    """Text as indexed: each CJK character a token, gaps between them barriers."""
    if not text:
        return ""
    text = text.replace(ZWSP, "").replace(BARRIER, "")
    text = _CJK_GAP.sub(lambda m: f"{ZWSP}{BARRIER}{ZWSP}{m[1]}", text)
    return CJK.sub(lambda m: f"{ZWSP}{m[0]}{ZWSP}", text)


def bigrams(*texts: str | None) -> str:
    """Adjacent CJK character pairs as tokens; separate runs and fields are barriers apart."""
    streams = []
    for text in texts:
        for run in _CJK_RUN.findall((text or "").replace(ZWSP, "").replace(BARRIER, "")):
            streams.append(" ".join(run[i : i + 2] for i in range(len(run) - 1)))
    return f" {BARRIER} ".join(streams)


def desegment(text: str) -> str:
    """Undo `segment`, so snippets show the original text."""
    return text.replace(ZWSP, "").replace(BARRIER, "")


def index_insert(page_id: int, row: dict) -> tuple[str, list]:
    """SQL that indexes a page, rowid = pages.id: segmented copies of its searchable
    columns, then the CJK bigrams of its title and of the rest."""
    columns = ", ".join(INDEX_COLUMNS)
    marks = ", ".join("?" for _ in INDEX_COLUMNS)
    values = [segment(row.get(column)) for column in FTS_COLUMNS]
    values += [bigrams(row.get("title")), bigrams(row.get("text"), row.get("author"), row.get("sitename"))]
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
