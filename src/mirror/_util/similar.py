"""How alike two extracted texts are: one article's (a duplicate, a soft 404 that is the site's
error page), and how much of an article a new version changed. Linear time, in 8-character runs
(shingles), which serve Chinese and English alike.

Bounded in memory and time whatever the texts: a set of every run of two 4 MB texts took 1.24 GB
and 39 s (issue 44). Past FULL_CHARS, the change is measured on a sample of the runs chosen by
their content (a run is kept when its hash falls in one slot of SAMPLE_SLOTS), so both versions
keep the same runs wherever an edit shifted them, and at most about MAX_SAMPLED of them, of their
first MAX_COMPARED characters (a change past them still counts: never 0 for texts that differ)."""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections.abc import Set

__all__ = ["CHANGED_AT_LEAST", "SAME_TEXT", "SHINGLE", "changed_fraction", "same_text", "text_hash"]

SHINGLE = 8  # characters: a run this long is rarely shared by two different texts, Chinese or English
SAME_TEXT = 0.75  # of the two texts' runs (first 5,000 characters), shared: one article, edited a little
FULL_CHARS = 200_000  # texts up to this long are compared on every run (an article of the web: a few thousand)
MAX_SAMPLED = 50_000  # runs kept of a longer text, about (each a 4-byte number)
MAX_COMPARED = 1_000_000  # characters of each text read for the sample (a quarter of a second each)


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
    mine: Set[object]  # the runs themselves, or a sample of their CRCs
    theirs: Set[object]
    if max(len(a), len(b)) <= FULL_CHARS:
        mine, theirs = _all_shingles(a), _all_shingles(b)
    else:
        a, b = a[:MAX_COMPARED], b[:MAX_COMPARED]
        every = -(-max(len(a), len(b)) // MAX_SAMPLED)  # keep one run in `every`, by its content
        mine, theirs = _sampled(a, every), _sampled(b, every)
        if not (mine | theirs):
            return 1.0
    return max(CHANGED_AT_LEAST, round(1 - len(mine & theirs) / len(mine | theirs), 4))


@functools.lru_cache(maxsize=64)  # same_text's: 5,000 characters each, a duplicate's text asked again
def _shingles(text: str) -> frozenset[str]:
    return _all_shingles(text)


def _all_shingles(text: str) -> frozenset[str]:
    return frozenset(text[i : i + SHINGLE] for i in range(max(1, len(text) - SHINGLE + 1)))


def _sampled(text: str, every: int) -> set[int]:
    """The CRCs of the runs whose CRC is 0 modulo `every`: a sample chosen by content (CRC-32, the
    same in every process, unlike `hash`), about len(text) / every of them, in one pass."""
    data = text.encode("utf-32-le")  # four bytes a character: run i is data[4i : 4i + 32]
    width = 4 * SHINGLE
    crc32 = zlib.crc32
    kept = set()
    for start in range(0, max(4, len(data) - width + 4), 4):
        value = crc32(data[start : start + width])
        if value % every == 0:
            kept.add(value)
    return kept
