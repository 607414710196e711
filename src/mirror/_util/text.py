"""Text hygiene shared by every layer (no imports from the rest of mirror)."""

from __future__ import annotations

import codecs
import functools
import re
from datetime import UTC
from typing import overload

__all__ = ["count", "decode", "decode_entities", "one_line", "readable_date", "strip_controls"]

# C0 controls but tab and newline, DEL and C1: ESC starts terminal sequences
# (OSC 0 sets the window title, OSC 52 writes the clipboard), CR overwrites a line.
_CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f"


def strip_controls(text: str, keep: str = "") -> str:
    """`text` without control characters, so it can never drive a terminal.

    Tab and newline stay, and so do the characters in `keep`.
    """
    return _pattern(keep).sub("", text)


def one_line(value: str) -> str:
    """A stored value on one line, without control characters: a title cannot forge an output's lines."""
    return " ".join(strip_controls(value).split())


_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


@overload
def decode_entities(text: str) -> str: ...
@overload
def decode_entities(text: None) -> None: ...
@overload
def decode_entities(text: str | None) -> str | None: ...
def decode_entities(text: str | None) -> str | None:
    """A title with its HTML character references decoded (`多维博客 &raquo; 播客热潮` -> `多维博客 »
    播客热潮`, `&amp;` -> `&`), once, where it is taken: a page's `<title>` escaped twice, a
    feed's or an export's title written as HTML, a Markdown link's text (CommonMark decodes
    them). What shows it escapes it again for its own output (HTML, XML), once."""
    if not text or "&" not in text or not _ENTITY.search(text):
        return text
    import html

    return html.unescape(text)


def count(n: int, word: str, words: str | None = None, *, thousands: bool = False) -> str:
    """`n` and the word for that many, as a person writes a count: `1 link`, `2 links`,
    `1 entry` / `2 entries` (`words`: a plural not made by adding an s; `thousands`:
    `12,000 pages`). Every count mirror shows a person goes through here (the reading home's
    too, as the `mirror_count` filter); tests/test_plurals.py greps for the others."""
    return (f"{n:,}" if thousands else str(n)) + f" {word if n == 1 else words or word + 's'}"


def readable_date(value: str | None) -> str:
    """An ISO date or timestamp as people read it: `2024-03-05`, `2026-11-25 13:05 UTC`.
    Anything else (a site's own date text) as it is."""
    if not value:
        return ""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return value
    if len(value.strip()) <= 10:  # a date alone
        return moment.date().isoformat()
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M")


@functools.cache
def _pattern(keep: str) -> re.Pattern:
    if not keep:
        return re.compile(f"[{_CONTROL_CHARS}]")
    return re.compile(f"(?![{re.escape(keep)}])[{_CONTROL_CHARS}]")


# Codecs Python knows that no web page is written in; some raise on any input
# (idna refuses errors="replace", punycode fails on any byte above 127). UTF-7 is not in
# the WHATWG Encoding Standard either (browsers ignore it: a way to smuggle markup), and it
# decodes to lone surrogates, which no URL or database value may hold.
_NOT_CHARSETS = frozenset({"idna", "punycode", "unicode-escape", "raw-unicode-escape", "utf-7"})


def decode(data: bytes, charset: str | None, errors: str = "strict") -> str | None:
    """`data` read as `charset`, or None: an unknown name, a codec that is not a text
    encoding, or bytes it cannot read. A charset comes from a hostile server; it never raises."""
    if not charset:
        return None
    try:
        info = codecs.lookup(charset.strip())
    except (LookupError, ValueError, TypeError):
        return None
    if info.name in _NOT_CHARSETS:
        return None
    try:
        return data.decode(info.name, errors)
    except (UnicodeError, ValueError, LookupError):  # LookupError: a codec that is not a text encoding (hex, rot13, zlib)
        return None
