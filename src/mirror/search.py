"""Full-text search that works for Chinese and Japanese, on a plain FTS5 table.

SQLite's unicode61 tokenizer sees a run of Han characters as one token and
trigram misses two-character words. So at index time every CJK character
becomes its own token: we put a zero-width space (a separator to unicode61)
around it, and where two CJK characters were not adjacent in the original
(punctuation or a space between them) we add a barrier token, so a phrase
query never matches across that gap. A query's CJK run becomes a phrase of
single characters: a 1-, 2-, 3- or 4-character word then matches exactly the
texts that contain it as a substring. The table stays ordinary FTS5 with the
standard tokenizer, and any sqlite3 client reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlite_utils

__all__ = ["FTS_TABLE", "Hit", "build_match", "desegment", "search", "segment"]

FTS_TABLE = "pages_fts"
FTS_COLUMNS = ("title", "text", "author", "sitename")
WEIGHTS = (10.0, 1.0, 2.0, 2.0)  # bm25: title above body
ZWSP = "\u200b"
BARRIER = "\ue000"  # private-use: unicode61 keeps it as a token of its own
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_GAP = re.compile(f"(?<=[{_CJK_CLASS}])([^{_CJK_CLASS}\\w]+)(?=[{_CJK_CLASS}])")
_MARK_START, _MARK_END = "\x02", "\x03"


def segment(text: str | None) -> str:
    """Text as indexed: each CJK character a token, gaps between them barriers."""
    if not text:
        return ""
    text = text.replace(ZWSP, "").replace(BARRIER, "")
    text = _CJK_GAP.sub(lambda m: f"{ZWSP}{BARRIER}{ZWSP}{m[1]}", text)
    return _CJK.sub(lambda m: f"{ZWSP}{m[0]}{ZWSP}", text)


def desegment(text: str) -> str:
    """Undo `segment`, so snippets show the original text."""
    return text.replace(ZWSP, "").replace(BARRIER, "")


def build_match(query: str) -> str | None:
    """A safe FTS5 MATCH expression for what the user typed, or None if empty.

    Words are ANDed; "quoted phrases" stay phrases; `word*` is a prefix
    query. Everything else FTS5 would parse as syntax (NEAR, AND, -, (, :, ^)
    is taken as plain words, and an unbalanced quote is ignored.
    """
    parts: list[str] = []
    pieces = re.split(r'("[^"]*")', query)
    for piece in pieces:
        if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2:
            phrase = _phrase_tokens(piece[1:-1])
            if phrase:
                parts.append(_quote(phrase))
            continue
        for word in piece.replace('"', " ").split():
            prefix = word.endswith("*")
            tokens = _phrase_tokens(word)
            if not tokens:
                continue
            expression = _quote(tokens)
            if prefix and not _CJK.search(tokens[-1]):
                expression += "*"
            parts.append(expression)
    return " AND ".join(parts) if parts else None


def _phrase_tokens(text: str) -> list[str]:
    """The tokens unicode61 would see in `text` once segmented."""
    tokens = []
    for run in re.findall(rf"[{_CJK_CLASS}]|[^\W_]+", text):
        run = "".join(ch for ch in run if ch != BARRIER)
        if run:
            tokens.append(run)
    return tokens


def _quote(tokens: list[str]) -> str:
    return '"' + " ".join(t.replace('"', '""') for t in tokens) + '"'


@dataclass
class Hit:
    id: int  # pages.id: the reader view is /-/mirror/page/<id>
    url: str
    title: str | None
    sitename: str | None
    date: str | None
    snippet: str  # original text, matches between \x02 and \x03
    score: float

    def as_dict(self, mark: tuple[str, str] = ("[", "]")) -> dict:
        return {
            "id": self.id,
            "url": self.url,
            "title": self.title,
            "sitename": self.sitename,
            "date": self.date,
            "snippet": highlight(self.snippet, *mark),
            "score": self.score,
        }


def highlight(snippet: str, start: str, end: str) -> str:
    return snippet.replace(_MARK_START, start).replace(_MARK_END, end)


def search(
    db: sqlite_utils.Database,
    query: str,
    *,
    limit: int = 20,
    site: str | None = None,
    seed: str | None = None,
    section: str | None = None,
) -> list[Hit]:
    """Ranked hits for `query` among archived pages (bm25, title weighted)."""
    match = build_match(query)
    if match is None or not db[FTS_TABLE].exists():
        return []
    where = [f"{FTS_TABLE} MATCH :match"]
    params: dict[str, object] = {"match": match, "limit": limit}
    if site:
        where.append("(pages.sitename = :site or pages.host = :site or pages.host like :site_sub or pages.url like :site_url)")
        params |= {"site": site, "site_sub": f"%.{site}", "site_url": f"%://{site}/%"}
    if seed:
        where.append("pages.url in (select url from links where seed = :seed or seed like :seed_tail)")
        params |= {"seed": seed, "seed_tail": f"%/{seed}"}
    if section:
        where.append("pages.url in (select url from links where section = :section)")
        params["section"] = section
    join = f"join pages on pages.id = {FTS_TABLE}.rowid" if len(where) > 1 else ""
    weights = ", ".join(str(w) for w in WEIGHTS)
    # Rank every match, but make snippets for the top `limit` only: a sorter would
    # otherwise build a snippet for each of thousands of matching pages.
    sql = f"""
        with top as (
            select {FTS_TABLE}.rowid as id, bm25({FTS_TABLE}, {weights}) as rank
            from {FTS_TABLE} {join}
            where {' and '.join(where)}
            order by rank
            limit :limit
        )
        select pages.id, pages.url, pages.title, pages.sitename, pages.date, top.rank,
               snippet({FTS_TABLE}, 1, char(2), char(3), '…', 24) as snippet_text,
               snippet({FTS_TABLE}, 0, char(2), char(3), '…', 24) as snippet_title
        from top
        join {FTS_TABLE} on {FTS_TABLE}.rowid = top.id
        join pages on pages.id = top.id
        where {FTS_TABLE} MATCH :match
        order by top.rank
    """
    hits = []
    for row in db.query(sql, params):
        snippet = row["snippet_text"] if _MARK_START in (row["snippet_text"] or "") else row["snippet_title"]
        hits.append(
            Hit(
                id=row["id"],
                url=row["url"],
                title=row["title"],
                sitename=row["sitename"],
                date=row["date"],
                snippet=_clean_snippet(snippet or ""),
                score=-row["rank"],
            )
        )
    return hits


def _clean_snippet(snippet: str) -> str:
    text = desegment(snippet)
    text = text.replace(_MARK_END + _MARK_START, "")  # one mark per matched phrase
    return re.sub(r"\s+", " ", text).strip()


def index_insert(page_id: int, row: dict) -> tuple[str, list]:
    """SQL that indexes a page: segmented copies of its searchable columns, rowid = pages.id."""
    columns = ", ".join(FTS_COLUMNS)
    marks = ", ".join("?" for _ in FTS_COLUMNS)
    return (
        f"insert into {FTS_TABLE} (rowid, {columns}) values (?, {marks})",
        [page_id, *(segment(row.get(column)) for column in FTS_COLUMNS)],
    )


def ensure_index(db: sqlite_utils.Database) -> bool:
    """Create the index if missing (or of an older layout); True if it was (re)created empty."""
    if db[FTS_TABLE].exists():
        if [c.name for c in db[FTS_TABLE].columns] == list(FTS_COLUMNS):
            return False
        db.execute(f"drop table {FTS_TABLE}")
    db.execute(
        f"create virtual table {FTS_TABLE} using fts5("
        f"{', '.join(FTS_COLUMNS)}, tokenize = 'unicode61 remove_diacritics 2')"
    )
    return True
