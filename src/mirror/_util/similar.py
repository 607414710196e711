"""How alike two extracted texts are: one article's (a duplicate, a soft 404 that is the site's
error page), and how much of an article a new version changed. Linear time, in 8-character runs
(shingles), which serve Chinese and English alike."""

from __future__ import annotations

import functools
import hashlib

__all__ = ["CHANGED_AT_LEAST", "SAME_TEXT", "SHINGLE", "changed_fraction", "same_text", "text_hash"]

SHINGLE = 8  # characters: a run this long is rarely shared by two different texts, Chinese or English
SAME_TEXT = 0.75  # of the two texts' runs (first 5,000 characters), shared: one article, edited a little


def _plain(text: str | None) -> str:
    return " ".join((text or "").split())


def text_hash(text: str | None) -> str | None:
    """A short digest of an article's text, whitespace aside: equal hashes, unchanged text."""
    plain = _plain(text)
    return hashlib.sha1(plain.encode("utf-8")).hexdigest()[:16] if plain else None


def same_text(a: str | None, b: str | None) -> bool:
    """Whether two extracted texts are one article's (whitespace aside, SAME_TEXT of their
    8-character runs shared; linear time, a millisecond or two): a canonical URL and a title
    are claims a page makes, and the second page of a series claims the first's."""
    a, b = _plain(a), _plain(b)
    if a == b:
        return True
    if not a or not b or min(len(a), len(b)) < 0.8 * max(len(a), len(b)):
        return False
    mine, theirs = _shingles(a[:5000]), _shingles(b[:5000])
    return len(mine & theirs) >= SAME_TEXT * len(mine | theirs)


CHANGED_AT_LEAST = 0.0001  # what a text that differs at all changed by, at the least: never 0


def changed_fraction(before: str | None, after: str | None) -> float:
    """How much of the text changed, 0 (the same) to 1 (nothing in common): the share of the
    two versions' 8-character runs that only one of them has. Two texts that differ (whitespace
    aside) changed by CHANGED_AT_LEAST at least, however long they are and however small the edit."""
    a, b = _plain(before), _plain(after)
    if a == b:
        return 0.0
    if not a or not b:
        return 1.0
    mine, theirs = _shingles(a), _shingles(b)
    return max(CHANGED_AT_LEAST, round(1 - len(mine & theirs) / len(mine | theirs), 4))


@functools.lru_cache(maxsize=64)
def _shingles(text: str) -> frozenset[str]:
    return frozenset(text[i : i + SHINGLE] for i in range(max(1, len(text) - SHINGLE + 1)))
