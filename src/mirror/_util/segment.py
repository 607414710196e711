"""CJK text made searchable by plain FTS5: the values the search index holds for a page.

SQLite's unicode61 tokenizer sees a run of Han characters as one token and trigram misses
two-character words, so every CJK character becomes its own token (zero-width spaces around
it, a barrier token where two were not adjacent), and two more columns hold CJK bigrams
(see `mirror.search`). A helper of no stage: the extraction workers make these values, so
that the process writing the database only inserts them (`mirror._fts` holds the layout).
"""

from __future__ import annotations

import functools
import re

__all__ = ["BARRIER", "CJK", "CJK_CLASS", "ZWSP", "bigrams", "desegment", "index_values", "segment"]

ZWSP = "\u200b"
BARRIER = "\ue000"  # private-use: unicode61 keeps it as a token of its own
CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
CJK = re.compile(f"[{CJK_CLASS}]")


@functools.cache  # compiled when text is indexed, not when a search starts (13 ms of `mirror search`)
def _cjk_run() -> re.Pattern:
    return re.compile(f"[{CJK_CLASS}]{{2,}}")


@functools.cache
def _cjk_gap() -> re.Pattern:
    return re.compile(f"(?<=[{CJK_CLASS}])([^{CJK_CLASS}\\w]+)(?=[{CJK_CLASS}])")


def segment(text: str | None) -> str:
    """Text as indexed: each CJK character a token, gaps between them barriers."""
    if not text:
        return ""
    text = text.replace(ZWSP, "").replace(BARRIER, "")
    text = _cjk_gap().sub(lambda m: f"{ZWSP}{BARRIER}{ZWSP}{m[1]}", text)
    return CJK.sub(lambda m: f"{ZWSP}{m[0]}{ZWSP}", text)


def bigrams(*texts: str | None) -> str:
    """Adjacent CJK character pairs as tokens; separate runs and fields are barriers apart."""
    streams = []
    for text in texts:
        for run in _cjk_run().findall((text or "").replace(ZWSP, "").replace(BARRIER, "")):
            streams.append(" ".join(run[i : i + 2] for i in range(len(run) - 1)))
    return f" {BARRIER} ".join(streams)


def desegment(text: str) -> str:
    """Undo `segment`, so snippets show the original text."""
    return text.replace(ZWSP, "").replace(BARRIER, "")


def index_values(title: str | None, text: str | None, author: str | None, sitename: str | None) -> tuple[str, ...]:
    """A page's values for the index columns (`mirror._fts.INDEX_COLUMNS`, in that order):
    the four searched columns segmented, then the CJK bigrams of the title and of the rest."""
    return (segment(title), segment(text), segment(author), segment(sitename), bigrams(title), bigrams(text, author, sitename))
