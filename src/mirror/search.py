"""Full-text search that works for Chinese and Japanese, on a plain FTS5 table.

SQLite's unicode61 tokenizer sees a run of Han characters as one token and
trigram misses two-character words. So at index time every CJK character
becomes its own token: we put a zero-width space (a separator to unicode61)
around it, and where two CJK characters were not adjacent in the original
(punctuation or a space between them) we add a barrier token, so a phrase
query never matches across that gap. That serves 1-character words and
English. Two more columns hold every pair of adjacent CJK characters as one
token (bigrams, runs kept apart by barriers): a word of 2 or more characters
becomes a phrase of its overlapping bigrams, whose posting lists are far
shorter than those of single characters. Either way a word matches exactly
the texts that contain it as a substring. The table stays ordinary FTS5 with
the standard tokenizer, and any sqlite3 client reads it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from typing import TYPE_CHECKING

# the index's layout and its CJK segmentation, re-exported: search is their public face
from ._types import PageStatus
from ._fts import FTS_COLUMNS, FTS_TABLE, ensure_index, index_insert
from ._segment import BARRIER, CJK, CJK_CLASS, ZWSP, bigrams, desegment, segment

if TYPE_CHECKING:
    import sqlite_utils

__all__ = [
    "BARRIER", "FTS_COLUMNS", "FTS_TABLE", "MAX_LIMIT", "ZWSP", "Hit", "SearchError", "SearchTimeout", "bigrams",
    "build_match", "check_query", "cjk_words", "desegment", "ensure_index", "index_insert", "parse_limit", "search",
    "segment",
]

WEIGHTS = (10.0, 1.0, 2.0, 2.0, 10.0, 1.0)  # bm25: title above body
_MARK_START, _MARK_END = "\x02", "\x03"

# Bounds on what one search may cost: every path (CLI, JSON API, the plugin's
# page, datasette's table search) goes through build_match and these limits.
MAX_QUERY_CHARS = 1000
MAX_TERMS = 16  # distinct words and phrases; repeats count once
MAX_LIMIT = 1000  # hits per search
TIME_LIMIT = 5.0  # seconds of SQLite work per search


class SearchError(ValueError):
    """A search we refuse to run; the message tells the user what to change."""


class SearchTimeout(SearchError):
    """The search ran past its time limit and was stopped."""


def build_match(query: str) -> str | None:
    """A safe FTS5 MATCH expression for what the user typed, or None if empty.

    Words are ANDed; "quoted phrases" stay phrases; `word*` is a prefix
    query. Everything else FTS5 would parse as syntax (NEAR, AND, -, (, :, ^)
    is taken as plain words, and an unbalanced quote is ignored. Repeated
    terms count once, and only the first MAX_TERMS are kept (`check_query`
    says so to the user first), so no query costs more than a few terms.
    """
    parts = _match_terms(query[:MAX_QUERY_CHARS])[:MAX_TERMS]
    return " AND ".join(parts) if parts else None


def check_query(query: str) -> None:
    """Raise SearchError if `query` is longer or has more terms than a search may."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"the search is {len(query)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    terms = len(_match_terms(query))
    if terms > MAX_TERMS:
        raise SearchError(f"the search has {terms} different words or phrases; at most {MAX_TERMS} are allowed")


def parse_limit(value: object, default: int = 20) -> int:
    """A hit count from user input: a whole number of at least 1, at most MAX_LIMIT."""
    if value is None or value == "":
        return default
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"[+-]?\d{1,30}", text):
        raise SearchError(f"limit must be a whole number, not {text[:40]!r}")
    limit = int(text)
    if limit < 1:
        raise SearchError(f"limit must be at least 1, not {limit}")
    return min(limit, MAX_LIMIT)


def _match_terms(query: str) -> list[str]:
    """The distinct FTS5 terms of `query`, in order."""
    parts: dict[str, None] = {}
    pieces = re.split(r'("[^"]*")', query)
    for piece in pieces:
        if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2:
            phrase = _phrase_tokens(piece[1:-1])
            if phrase:
                parts[_term(phrase, prefix=False)] = None
            continue
        for word in piece.replace('"', " ").split():
            tokens = _phrase_tokens(word)
            if tokens:
                parts[_term(tokens, prefix=word.endswith("*"))] = None
    return list(parts)


def cjk_words(query: str) -> list[str]:
    """The Chinese/Japanese words of a query, as they must appear in the text."""
    words = []
    for piece in re.split(r'("[^"]*")', query):
        chunks = [piece[1:-1]] if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2 else piece.split()
        for chunk in chunks:
            tokens = _phrase_tokens(chunk)
            if tokens and all(CJK.fullmatch(t) for t in tokens):
                words.append("".join(tokens))
    return words


def _term(tokens: list[str], prefix: bool) -> str:
    if len(tokens) >= 2 and all(CJK.fullmatch(t) for t in tokens):
        word = "".join(tokens)  # a phrase of its overlapping bigrams, found in the bigram columns
        return _quote([word[i : i + 2] for i in range(len(word) - 1)])
    expression = _quote(tokens)
    if prefix and not CJK.search(tokens[-1]):
        expression += "*"
    return expression


def _phrase_tokens(text: str) -> list[str]:
    """The tokens unicode61 would see in `text` once segmented."""
    tokens = []
    for run in re.findall(rf"[{CJK_CLASS}]|[^\W_]+", text):
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


def _filters(site: str | None, seed: str | None, section: str | None) -> tuple[dict[str, str], dict[str, object]]:
    """The SQL conditions on `pages` of the filters given, by option name, and their parameters."""
    where: dict[str, str] = {}
    params: dict[str, object] = {}
    if site:
        where["site"] = "(pages.sitename = :site or pages.host = :site or pages.host like :site_sub or pages.url like :site_url)"
        params |= {"site": site, "site_sub": f"%.{site}", "site_url": f"%://{site}/%"}
    if seed:
        where["seed"] = "pages.url in (select url from links where seed = :seed or seed like :seed_tail)"
        params |= {"seed": seed, "seed_tail": f"%/{seed}"}
    if section:
        where["section"] = "pages.url in (select url from links where section = :section)"
        params["section"] = section
    return where, params


def unmatched_filters(db: sqlite_utils.Database | sqlite3.Connection, *, site: str | None = None, seed: str | None = None,
                      section: str | None = None) -> list[str]:
    """The filters (`site`, `seed`, `section`) that no archived page passes: a search that found
    nothing says which filter was the cause, not that no article has the words."""
    conn = getattr(db, "conn", db)
    where, params = _filters(site, seed, section)
    unmatched = []
    for name, condition in where.items():
        if not conn.execute(f"select 1 from pages where status = :archived and {condition} limit 1",
                            {**params, "archived": PageStatus.ARCHIVED}).fetchone():
            unmatched.append(name)
    return unmatched


def search(
    db: sqlite_utils.Database | sqlite3.Connection,
    query: str,
    *,
    limit: int = 20,
    site: str | None = None,
    seed: str | None = None,
    section: str | None = None,
    time_limit: float = TIME_LIMIT,
) -> list[Hit]:
    """Ranked hits for `query` among archived pages (bm25, title weighted).

    Raises SearchError for a query that is too long or has too many terms or
    a bad `limit` (above MAX_LIMIT is cut to it), and SearchTimeout when
    SQLite works on it longer than `time_limit` seconds.
    """
    check_query(query)
    limit = parse_limit(limit)
    match = build_match(query)
    conn = getattr(db, "conn", db)  # a sqlite-utils Database, or a plain connection
    if match is None or not conn.execute("select 1 from sqlite_master where name = ?", [FTS_TABLE]).fetchone():
        return []
    filters, params = _filters(site, seed, section)
    where = [f"{FTS_TABLE} MATCH :match", *filters.values()]
    params |= {"match": match, "limit": limit}
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
        select pages.id, pages.url, pages.title, pages.sitename, pages.date, top.rank, pages.text,
               snippet({FTS_TABLE}, 1, char(2), char(3), '…', 24) as snippet_text,
               snippet({FTS_TABLE}, 0, char(2), char(3), '…', 24) as snippet_title
        from top
        join {FTS_TABLE} on {FTS_TABLE}.rowid = top.id
        join pages on pages.id = top.id
        where {FTS_TABLE} MATCH :match
        order by top.rank
    """
    hits = []
    words = cjk_words(query)
    with _deadline(conn, time_limit):
        cursor = conn.execute(sql, params)
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        if _MARK_START in (row["snippet_text"] or ""):
            snippet = row["snippet_text"]
        else:  # a Chinese word matched in the bigram columns: mark it in the original text
            snippet = _snippet(row["text"] or "", words) or _snippet(row["title"] or "", words) or row["snippet_title"]
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


@contextmanager
def _deadline(conn: sqlite3.Connection, seconds: float) -> Iterator[None]:
    """Interrupt SQLite once `seconds` have passed (the handler runs every few thousand steps)."""
    end = time.monotonic() + seconds
    conn.set_progress_handler(lambda: time.monotonic() > end, 2000)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupt" not in str(exc).lower():
            raise
        raise SearchTimeout(
            f"the search was stopped after {seconds:g} s; use fewer words, rarer words or longer prefixes"
        ) from None
    finally:
        conn.set_progress_handler(None, 0)


def _snippet(text: str, words: list[str], width: int = 60) -> str | None:
    found = [i for i in (text.find(w) for w in words) if i >= 0]
    if not found:
        return None
    start = max(0, min(found) - width // 3)
    window = text[start : start + width]
    pattern = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    window = re.sub(pattern, lambda m: f"{_MARK_START}{m[0]}{_MARK_END}", window)
    return ("…" if start else "") + window + ("…" if start + width < len(text) else "")


_MD_IMAGE = re.compile(r"!\[([^\]\x02\x03]*)\]\([^)\s]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\((?:https?:|/|\.|#)[^)\s]*\)")
# a window cut inside a link or image: "…p.jpg) text" at the start, "text [word](http://…" at the end
_CUT_TARGET_START = re.compile(r"^(…?)[^\s()\[\]]*(?:/|\.(?:jpe?g|png|gif|webp|svg|s?html?|php|aspx?))[^\s()\[\]]*\)", re.I)
_CUT_TARGET_END = re.compile(r"(!?\[[^\]]*)?\]\([^)]*$|!\[[^\]]*$")
_CONTROL = re.compile(r"[\x00-\x01\x04-\x08\x0b-\x1f\x7f-\x9f]")  # \x02 and \x03 are our marks


def _clean_snippet(snippet: str) -> str:
    """Plain text. An archive extracted before `text` was plain has Markdown links and
    images in it until `mirror reindex`: their words stay, their syntax and URLs go."""
    text = desegment(snippet)
    text = text.replace(_MARK_END + _MARK_START, "")  # one mark per matched phrase
    text = _MD_LINK.sub(r"\1", _MD_IMAGE.sub("", text))
    text = _CUT_TARGET_END.sub(lambda m: (m[1] or "").lstrip("![") + "…", _CUT_TARGET_START.sub(r"\1", text))
    return re.sub(r"\s+", " ", _CONTROL.sub("", text)).strip()
