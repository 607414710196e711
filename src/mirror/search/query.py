"""Ranked, bounded search over the index: bm25 with the title above the body, filters by site,
seed and section, highlighted snippets."""

from __future__ import annotations

import re
import sqlite3
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from .._enums import PageStatus
from .._fts import FTS_TABLE
from .._util.segment import desegment, is_cjk, is_word_char, word_runs
from .match import TIME_LIMIT, SearchTimeout, build_match, check_query, cjk_words, parse_limit, plain_query, query_words, title_match

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["RANKED_AT_MOST", "WEIGHTS", "Hit", "count_matches", "highlight", "pending_matches", "ranking_floor", "search", "unmatched_filters"]

WEIGHTS = (10.0, 1.0, 2.0, 2.0, 10.0, 1.0)  # bm25: title above body
# bm25 costs ~5 µs a matching article: past this many matches (a word in most articles: "the", 的),
# only the most recently added this many are ranked, so that no search costs more than ~30 ms
# whatever the archive's size. With a filter (site, seed, section), every match is ranked.
RANKED_AT_MOST = 5000
_CHECK_EVERY = 2000  # SQLite steps between two looks at the clock
_MARK_START, _MARK_END = "\x02", "\x03"


class HitJson(TypedDict):
    """A hit as JSON writes it (`mirror search --json`, the plugin's JSON)."""

    id: int
    url: str
    title: str | None
    sitename: str | None
    date: str | None
    snippet: str  # matches marked as asked
    score: float
    health: str | None


class Hit(NamedTuple):  # (not a dataclass: `import dataclasses` costs `mirror search` 10-15 ms)
    id: int  # pages.id: the reader view is /-/mirror/page/<id>
    url: str
    title: str | None
    sitename: str | None
    date: str | None
    snippet: str  # original text, matches between \x02 and \x03
    score: float
    health: str | None = None  # what the latest check found (a VersionState): a page gone live stays findable, marked

    @property
    def rotted(self) -> bool:
        """The live page is gone, a soft 404 or blocked: this hit is the saved copy only."""
        return self.health in ("gone", "soft_404", "blocked")

    def as_dict(self, mark: tuple[str, str] = ("[", "]")) -> HitJson:
        return {
            "id": self.id,
            "url": self.url,
            "title": self.title,
            "sitename": self.sitename,
            "date": self.date,
            "snippet": highlight(self.snippet, *mark),
            "score": self.score,
            "health": self.health,
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


def unmatched_filters(
    db: sqlite_utils.Database | sqlite3.Connection, *, site: str | None = None, seed: str | None = None, section: str | None = None
) -> list[str]:
    """The filters (`site`, `seed`, `section`) that no archived page passes: a search that found
    nothing says which filter was the cause, not that no article has the words."""
    conn = db if isinstance(db, sqlite3.Connection) else db.conn
    where, params = _filters(site, seed, section)
    unmatched = []
    for name, condition in where.items():
        if not conn.execute(
            f"select 1 from pages where status = :archived and {condition} limit 1", {**params, "archived": PageStatus.ARCHIVED}
        ).fetchone():
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
    conn = db if isinstance(db, sqlite3.Connection) else db.conn  # a plain connection, or a sqlite-utils Database's
    if match is None or not conn.execute("select 1 from sqlite_master where name = ?", [FTS_TABLE]).fetchone():
        return []
    filters, params = _filters(site, seed, section)
    where = [f"{FTS_TABLE} MATCH :match", *filters.values()]
    params |= {"match": match, "limit": limit}
    with _deadline(conn, time_limit):
        floor = None if filters else ranking_floor(conn, match)
    if floor is not None:
        where.append(f"{FTS_TABLE}.rowid >= :floor")
        params["floor"] = floor
    join = f"join pages on pages.id = {FTS_TABLE}.rowid" if filters else ""  # (the floor is the index's own rowid)
    weights = ", ".join(str(w) for w in WEIGHTS)
    # bm25 weighs a title's match as so many more occurrences, which a character common in the text
    # outnumbers (a short page saying it four times outranked titles that hold it): for a query of
    # one character, the pages with it in their title come first, by bm25 among themselves
    titled = title_match(query)
    later = "0"  # 1: a page ranked after those with the query in their title
    if titled is not None:
        newest = " and rowid >= :floor" if floor is not None else ""  # (only those ranked)
        later = f"{FTS_TABLE}.rowid not in (select rowid from {FTS_TABLE} where {FTS_TABLE} match :titled{newest})"
        params["titled"] = titled
    # Rank every match, but make snippets for the top `limit` only: a sorter would
    # otherwise build a snippet for each of thousands of matching pages.
    sql = f"""
        with top as (
            select {FTS_TABLE}.rowid as id, bm25({FTS_TABLE}, {weights}) as rank, {later} as later
            from {FTS_TABLE} {join}
            where {" and ".join(where)}
            order by later, rank
            limit :limit
        )
        select pages.id, pages.url, pages.title, pages.sitename, pages.date, top.rank, pages.text, {_health(conn)} as health
        from top
        join pages on pages.id = top.id
        order by top.later, top.rank
    """
    hits = []
    words = _Words(query)
    with _deadline(conn, time_limit):
        cursor = conn.execute(sql, params)
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        # the index keeps no copy of the text (contentless): the words are found in the page's own text
        snippet = _snippet(row["text"] or "", words) or _snippet(row["title"] or "", words) or (row["text"] or "")[:100]
        hits.append(
            Hit(
                id=row["id"],
                url=row["url"],
                title=row["title"],
                sitename=row["sitename"],
                date=row["date"],
                snippet=_clean_snippet(snippet or ""),
                score=-row["rank"],
                health=row["health"],
            )
        )
    return hits


def count_matches(
    db: sqlite_utils.Database | sqlite3.Connection,
    query: str,
    *,
    site: str | None = None,
    seed: str | None = None,
    section: str | None = None,
    at_most: int = RANKED_AT_MOST,
    time_limit: float = TIME_LIMIT,
) -> tuple[int, bool]:
    """How many archived pages `query` matches (with the filters), counted up to `at_most`: (the
    count, whether there are more). Past that, counting costs what ranking was spared."""
    check_query(query)
    match = build_match(query)
    conn = db if isinstance(db, sqlite3.Connection) else db.conn
    if match is None or not conn.execute("select 1 from sqlite_master where name = ?", [FTS_TABLE]).fetchone():
        return 0, False
    filters, params = _filters(site, seed, section)
    join = f"join pages on pages.id = {FTS_TABLE}.rowid" if filters else ""
    where = " and ".join([f"{FTS_TABLE} MATCH :match", *filters.values()])
    with _deadline(conn, time_limit):
        found = conn.execute(
            f"select count(*) from (select {FTS_TABLE}.rowid from {FTS_TABLE} {join} where {where} limit {int(at_most) + 1})",
            params | {"match": match},
        ).fetchone()[0]
    return (at_most, True) if found > at_most else (found, False)


def pending_matches(db: sqlite_utils.Database | sqlite3.Connection, query: str) -> tuple[int, int]:
    """(pages not fetched yet, those of them whose link title or address holds the query's words):
    a search that found nothing says when what it looks for may not be fetched yet."""
    conn = db if isinstance(db, sqlite3.Connection) else db.conn
    pending = conn.execute("select count(*) from pages where status = ?", [PageStatus.PENDING]).fetchone()[0]
    groups = [[word for word in group if word] for group in query_words(query)]
    groups = [group for group in groups if group]
    if not pending or not groups:
        return pending, 0
    conditions, params = [], []
    for group in groups:
        alternatives = []
        for word in group:
            pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            alternatives.append("(links.title like ? escape '\\' or links.url like ? escape '\\')")
            params += [pattern, pattern]
        conditions.append("(" + " or ".join(alternatives) + ")")
    titled = conn.execute(
        f"select count(distinct pages.url) from pages join links on links.url = pages.url where pages.status = ? and {' and '.join(conditions)}",
        [PageStatus.PENDING, *params],
    ).fetchone()[0]
    return pending, titled


def ranking_floor(conn: sqlite3.Connection, match: str, most: int | None = None) -> int | None:
    """The smallest page id ranked when `match` has more than `most` matches (the newest `most`
    are), else None: every match is ranked. Both reads walk ids only, newest first (no bm25)."""
    most = RANKED_AT_MOST if most is None else most
    matches = conn.execute(f"select count(*) from (select rowid from {FTS_TABLE} where {FTS_TABLE} match ? limit {most + 1})", [match]).fetchone()[0]
    if matches <= most:
        return None
    floor: int = conn.execute(
        f"select rowid from {FTS_TABLE} where {FTS_TABLE} match ? order by rowid desc limit 1 offset {most - 1}", [match]
    ).fetchone()[0]
    return floor


def _health(conn: sqlite3.Connection) -> str:
    """`pages.health`, or null in an archive from before versions that could not be brought up to date (read-only)."""
    columns = {row[1] for row in conn.execute("pragma table_info(pages)")}
    return "pages.health" if "health" in columns else "null"


@contextmanager
def _deadline(conn: sqlite3.Connection, seconds: float) -> Iterator[None]:
    """Interrupt SQLite once `seconds` have passed (the handler runs every few thousand steps);
    a Ctrl-C meanwhile stays a KeyboardInterrupt."""
    end = time.monotonic() + seconds
    pressed = []

    def past() -> bool:
        try:
            return time.monotonic() > end
        except KeyboardInterrupt:  # (sqlite3 would swallow it, and the search read as timed out)
            pressed.append(True)
            return True

    conn.set_progress_handler(past, _CHECK_EVERY)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if pressed:  # (whatever SQLite made of it: "interrupted", "vtable constructor failed")
            raise KeyboardInterrupt from None
        if "interrupt" not in str(exc).lower():
            raise
        raise SearchTimeout(f"the search was stopped after {seconds:g} s; use fewer words, rarer words or longer prefixes") from None
    finally:
        conn.set_progress_handler(None, 0)


class _Words:
    """What a snippet marks, matched in `_folded` text: the query's Chinese words as written, its
    other words as whole words (a `word*` as a prefix), a word ending as the index's do (at a
    Chinese character too: "GPU" in "用GPU加速"). The pattern is the words alone; their ends are
    checked here (a pattern of the CJK class costs `mirror search` 6 ms to compile)."""

    def __init__(self, query: str):
        query = plain_query(query)  # (not `OR`, not `title:`)
        self.chinese = sorted({_folded(w) for w in cjk_words(query)}, key=len, reverse=True)
        self.others: list[str] = []
        self.prefixes: set[str] = set()
        for written in re.findall(r"[^\W_]+\*?", query):  # a word, CJK characters and all, then a * if any
            runs = [_folded(run) for run in word_runs(written.rstrip("*")) if not is_cjk(run[0])]
            self.others += [run for run in runs if run not in self.others]
            if runs and written.endswith("*") and not is_cjk(written[-2]):
                self.prefixes.add(runs[-1])
        words = self.chinese + self.others
        self.pattern = re.compile("|".join(re.escape(w) for w in words)) if words else None

    def finditer(self, text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
        """(start, end) of each match beginning in text[start:end], leftmost first; at a place
        where one word does not end as a word, the next is tried ("ca cat" marks "cat")."""
        if self.pattern is None:
            return
        end = len(text) if end is None else end
        at = start
        while (found := self.pattern.search(text, at, end)) is not None:
            hit = self._at(text, found.start())
            if hit is None:
                at = found.start() + 1
                continue
            yield hit
            at = hit[1]

    def _at(self, text: str, at: int) -> tuple[int, int] | None:
        for word in self.chinese:  # found anywhere
            if text.startswith(word, at):
                return at, at + len(word)
        if at > 0 and is_word_char(text[at - 1]):
            return None  # inside a longer word
        for word in self.others:
            if not text.startswith(word, at):
                continue
            to = at + len(word)
            if word in self.prefixes:
                while to < len(text) and is_word_char(text[to]):
                    to += 1
                return at, to
            if to >= len(text) or not is_word_char(text[to]):
                return at, to
        return None

    def search(self, text: str) -> tuple[int, int] | None:
        return next(self.finditer(text), None)


SNIPPET_SCAN = 200_000  # characters of a page's text a snippet looks through for its words
_SCANS = (2_000, 20_000, SNIPPET_SCAN)  # folded and searched in turn, each cut where a word ends
_LONGEST_WORD = 200  # characters a cut or a window's end may move on to end where a word does


def _word_end(text: str, at: int) -> int:
    """`at`, or the end of the word it falls in (up to _LONGEST_WORD characters on)."""
    limit = min(len(text), at + _LONGEST_WORD)
    while at < limit and text[at].isalnum():
        at += 1
    return at


def _snippet(text: str, words: _Words, width: int = 100) -> str | None:
    """A window of `text` around the first match of `words`, every match in it marked. Matched in
    a folded copy of the same length (case and accents aside, as the index has them)."""
    for scan in _SCANS:  # a word most pages have is found in their first lines: fold those first
        cut = _word_end(text, scan)
        folded = _folded(text[:cut])
        first = words.search(folded)
        if first is not None or cut >= len(text):
            break
    if first is None:
        return None
    start = max(0, first[0] - width // 3)
    end = start + width
    if len(folded) < len(text) and len(folded) < end + _LONGEST_WORD:
        folded = _folded(text[: _word_end(text, end + _LONGEST_WORD)])  # the window's words end where they end
    pieces, at = [], start
    for match_start, match_end in words.finditer(folded, start, min(end, len(folded))):
        pieces += [text[at:match_start], _MARK_START, text[match_start:match_end], _MARK_END]
        at = match_end
    pieces.append(text[at:end])
    return ("…" if start else "") + "".join(pieces) + ("…" if end < len(text) else "")


class _Fold(dict[int, str]):
    """str.translate's table: each character to one, lower-cased and without its accents (as
    unicode61 with remove_diacritics folds them), so positions in the copy are the original's."""

    def __missing__(self, code: int) -> str:
        folded = (unicodedata.normalize("NFD", chr(code))[:1].lower() or chr(code))[:1]
        self[code] = folded
        return folded


_FOLD = _Fold()


def _folded(text: str) -> str:
    """`text` folded by `_FOLD`. Where no character decomposes and each lower-cases to one, alone
    (most English and Chinese text), that is `lower()`: str.translate calls the table for every
    character, 60 ns each, 10 ms for a long article's text."""
    lowered = text.lower()
    if len(lowered) == len(text) and (text.isascii() or ("Σ" not in text and unicodedata.is_normalized("NFD", text))):
        return lowered  # (lower() makes a word's last Σ a ς: the table makes every one σ)
    return text.translate(_FOLD)


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
