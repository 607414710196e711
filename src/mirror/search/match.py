"""What the user typed -> a safe FTS5 MATCH expression, and the bounds on what one search may cost."""

from __future__ import annotations

import re

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
