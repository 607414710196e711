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

__all__ = ["BARRIER", "CJK_CLASS", "ZWSP", "bigrams", "cjk_runs", "desegment", "index_values", "is_cjk", "is_word_char", "segment", "word_runs"]

ZWSP = "\u200b"
BARRIER = "\ue000"  # private-use: unicode61 keeps it as a token of its own
CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xAC00, 0xD7AF), (0x20000, 0x2FFFF))  # CJK_CLASS


def is_cjk(char: str) -> bool:
    """Whether a character is one CJK_CLASS holds: a query's few characters are looked at here,
    not with a pattern of the class, whose compiling (6 ms a pattern) `mirror search` would pay."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def is_word_char(char: str) -> bool:
    """A letter or digit that is not CJK: what a word other than Chinese is made of, as the
    index's tokenizer sees it (`[^\\W_]`, less CJK_CLASS)."""
    return char.isalnum() and not is_cjk(char)


def word_runs(text: str) -> list[str]:
    """Each CJK character, and each run of other letters and digits, in order: the tokens of
    `text` as indexed once segmented ("GPU加速": GPU, 加, 速)."""
    runs: list[str] = []
    word = ""
    for char in text:
        if is_cjk(char):
            runs += [word, char] if word else [char]
            word = ""
        elif char.isalnum():
            word += char
        elif word:
            runs.append(word)
            word = ""
    return [*runs, word] if word else runs


@functools.cache  # compiled when text is indexed, not when a search starts
def _cjk() -> re.Pattern:
    return re.compile(f"[{CJK_CLASS}]")


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
    return _cjk().sub(lambda m: f"{ZWSP}{m[0]}{ZWSP}", text)


def bigrams(*texts: str | None) -> str:
    """Adjacent CJK character pairs as tokens; separate runs and fields are barriers apart."""
    streams = []
    for text in texts:
        for run in _cjk_run().findall((text or "").replace(ZWSP, "").replace(BARRIER, "")):
            streams.append(" ".join(run[i : i + 2] for i in range(len(run) - 1)))
    return f" {BARRIER} ".join(streams)


def cjk_runs(text: str) -> list[str]:
    """The runs of two or more adjacent CJK characters in `text`."""
    return _cjk_run().findall(text)


def desegment(text: str) -> str:
    """Undo `segment`, so snippets show the original text."""
    return text.replace(ZWSP, "").replace(BARRIER, "")


def index_values(title: str | None, text: str | None, author: str | None, sitename: str | None) -> tuple[str, ...]:
    """A page's values for the index columns (`mirror._fts.INDEX_COLUMNS`, in that order):
    the four searched columns segmented, then the CJK bigrams of the title and of the rest."""
    return (segment(title), segment(text), segment(author), segment(sitename), bigrams(title), bigrams(text, author, sitename))
