"""What the user typed -> a safe FTS5 MATCH expression, and the bounds on what one search may cost."""

from __future__ import annotations

import re
from typing import NamedTuple

from .._util.segment import BARRIER, is_cjk, word_runs

__all__ = [
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "TIME_LIMIT",
    "SearchError",
    "SearchTimeout",
    "build_match",
    "check_query",
    "cjk_words",
    "parse_limit",
    "plain_query",
    "query_words",
    "title_match",
]

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

    Words are ANDed; "quoted phrases" stay phrases; `word*` is a prefix query; `a OR b` matches
    either (OR, in capitals, between two words or phrases); `title:word` and `title:"a phrase"`
    match in titles only. Everything else FTS5 would parse as syntax (NEAR, AND, NOT, -, (, :,
    ^) is taken as plain words, and an unbalanced quote is ignored. Repeated terms count once,
    and only the first MAX_TERMS are kept (`check_query` says so to the user first), so no
    query costs more than a few terms.
    """
    groups = _match_groups(query[:MAX_QUERY_CHARS], MAX_TERMS)
    return " AND ".join(groups) if groups else None


def check_query(query: str) -> None:
    """Raise SearchError if `query` is longer or has more terms than a search may."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"the search is {len(query)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    terms = len(_distinct_terms(_parse(query)))
    if terms > MAX_TERMS:
        raise SearchError(f"the search has {terms} different words or phrases; at most {MAX_TERMS} are allowed")


def query_words(query: str) -> list[list[str]]:
    """The words and phrases of each group of the query as typed (quotes and a prefix's `*` off):
    what a search of link titles looks for (`search.pending_matches`)."""
    return [[term.written.strip('"').rstrip("*") for term in group] for group in _parse(query)]


def title_match(query: str) -> str | None:
    """For a query of one character (`显`, `C`), the MATCH expression of that character in titles:
    a page with it in its title ranks first (see `query.search`); None for any other query."""
    groups = _parse(query[:MAX_QUERY_CHARS])
    if len(groups) != 1 or len(groups[0]) != 1:
        return None
    term = groups[0][0]
    tokens = _phrase_tokens(term.written.strip('"').rstrip("*"))
    if len(tokens) != 1 or len(tokens[0]) != 1 or term.expression.startswith(_TITLE_COLUMNS):
        return None
    return f"{_TITLE_COLUMNS} : {term.expression}"


def plain_query(query: str) -> str:
    """The query's words and phrases without its operators (`OR`, `title:`): what a snippet marks."""
    return " ".join(term.written for group in _parse(query) for term in group)


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


class _Term(NamedTuple):
    written: str  # as typed, a phrase in its quotes, without `title:`
    expression: str  # in FTS5's syntax: what makes two terms the same


_TITLE = "title:"
_TITLE_COLUMNS = "{title title2}"  # a title's words, and its CJK bigrams


def _parse(query: str) -> list[list[_Term]]:
    """The query as groups of terms: every group must match, any term of a group (`a OR b`).
    Terms without tokens (`-`, `*`) are dropped; a repeated term or group counts once."""
    items: list[_Term | None] = []  # None: an `OR`
    in_title = False  # `title:` just before a quoted phrase
    for piece in re.split(r'("[^"]*")', query):
        if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2:
            items.append(_term_of(piece, _phrase_tokens(piece[1:-1]), False, in_title))
            in_title = False
            continue
        in_title = False
        words = piece.replace('"', " ").split()
        for number, word in enumerate(words):
            titled = word[: len(_TITLE)].lower() == _TITLE
            if word == "OR":
                items.append(None)
            elif titled and len(word) == len(_TITLE):
                in_title = number == len(words) - 1 and not piece[-1:].isspace()  # `title:"a phrase"`
            else:
                text = word[len(_TITLE) :] if titled else word
                items.append(_term_of(text, _phrase_tokens(text), text.endswith("*"), titled))
    groups: list[list[_Term]] = []
    current: list[_Term] | None = None
    joining = False
    for number, item in enumerate(items):
        if item is None:
            after = items[number + 1] if number + 1 < len(items) else None
            if current is not None and after is not None and after.expression:  # between two terms: an operator
                joining = True
                continue
            item = _term_of("OR", ["OR"], False, False)  # else the word it is
        if not item.expression:
            continue
        if joining and current is not None:
            if item.expression not in (term.expression for term in current):
                current.append(item)
        else:
            current = [item]
            groups.append(current)
        joining = False
    unique: dict[tuple[str, ...], list[_Term]] = {}
    for group in groups:
        unique.setdefault(tuple(term.expression for term in group), group)
    return list(unique.values())


def _term_of(written: str, tokens: list[str], prefix: bool, in_title: bool) -> _Term:
    expression = _term(tokens, prefix=prefix) if tokens else ""
    if expression and in_title:
        expression = f"{_TITLE_COLUMNS} : {expression}"
    return _Term(written, expression)


def _distinct_terms(groups: list[list[_Term]]) -> set[str]:
    return {term.expression for group in groups for term in group}


def _match_groups(query: str, most: int) -> list[str]:
    """The FTS5 expressions of the query's groups, while they hold at most `most` distinct terms."""
    seen: set[str] = set()
    expressions = []
    for group in _parse(query):
        terms = {term.expression for term in group}
        if len(seen | terms) > most:
            break
        seen |= terms
        parts = [term.expression for term in group]
        expressions.append(parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")")
    return expressions


def cjk_words(query: str) -> list[str]:
    """The Chinese/Japanese words of a query, as they must appear in the text."""
    words = []
    for piece in re.split(r'("[^"]*")', query):
        chunks = [piece[1:-1]] if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2 else piece.split()
        for chunk in chunks:
            tokens = _phrase_tokens(chunk)
            if tokens and all(len(t) == 1 and is_cjk(t) for t in tokens):
                words.append("".join(tokens))
    return words


def _term(tokens: list[str], prefix: bool) -> str:
    if len(tokens) >= 2 and all(len(t) == 1 and is_cjk(t) for t in tokens):
        word = "".join(tokens)  # a phrase of its overlapping bigrams, found in the bigram columns
        return _quote([word[i : i + 2] for i in range(len(word) - 1)])
    expression = _quote(tokens)
    if prefix and not any(is_cjk(char) for char in tokens[-1]):
        expression += "*"
    return expression


def _phrase_tokens(text: str) -> list[str]:
    """The tokens unicode61 would see in `text` once segmented."""
    tokens = []
    for run in word_runs(text):  # "GPU加速": GPU, 加, 速, as indexed
        run = "".join(ch for ch in run if ch != BARRIER)
        if run:
            tokens.append(run)
    return tokens


def _quote(tokens: list[str]) -> str:
    return '"' + " ".join(t.replace('"', '""') for t in tokens) + '"'
