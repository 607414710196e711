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

    match  what the user typed -> a safe FTS5 MATCH expression; the bounds on a search
    query  the ranked search itself, its filters and snippets
The index's layout is `mirror._fts` (the store writes it, search reads it), its segmentation `mirror._util.segment`:
search works on any connection to an archive and imports nothing of the store.
"""

from __future__ import annotations

from .._fts import FTS_COLUMNS, FTS_TABLE, ensure_index, index_insert
from .._util.segment import BARRIER, ZWSP, bigrams, desegment, segment
from .match import MAX_LIMIT, MAX_QUERY_CHARS, MAX_TERMS, TIME_LIMIT, SearchError, SearchTimeout, build_match, check_query, cjk_words, parse_limit
from .query import RANKED_AT_MOST, WEIGHTS, Hit, count_matches, highlight, pending_matches, ranking_floor, search, unmatched_filters

__all__ = [
    "BARRIER",
    "ZWSP",
    "bigrams",
    "desegment",
    "ensure_index",
    "index_insert",
    "segment",
    "FTS_COLUMNS",
    "FTS_TABLE",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "TIME_LIMIT",
    "WEIGHTS",
    "Hit",
    "SearchError",
    "SearchTimeout",
    "build_match",
    "check_query",
    "cjk_words",
    "highlight",
    "parse_limit",
    "search",
    "count_matches",
    "pending_matches",
    "unmatched_filters",
    "RANKED_AT_MOST",
    "ranking_floor",
]
