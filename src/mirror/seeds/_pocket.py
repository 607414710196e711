"""Pocket's HTML export read without an HTML parser: one regular expression a row.

Pocket writes one rigid shape (`<li><a href="..." time_added="..." tags="...">title</a></li>`,
a line each, under `<h1>Unread</h1>` and `<h1>Read Archive</h1>`). A document made only of
that shape's pieces, with none of the characters and references an HTML parser reads in more
than one way, gives here the rows `html._rows` gives from libxml2's tree, in a fraction of the
time (tests/test_seeds_pocket.py checks them against each other on random documents). Anything
else, even one row off the shape, is left to the parser. One difference, deliberate: libxml2's
HTML parser stops counting lines at 65,535; read here, each link keeps its own line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["begins_in_shape", "pocket_rows"]

# what a value or a title may hold: no markup, no control or non-character (a parser may drop or
# replace them), and an ampersand only where it is one reading (`_decoded`)
_PLAIN = r"[^\x00-\x1f\x7f-\x9f<&\"\ufdd0-\ufdef\ufffe\uffff]"
_REFERENCE = r"&(?:amp|lt|gt|quot|#39|#039);"
_VALUE = rf"(?:{_PLAIN}++|{_REFERENCE}|&(?=[A-Za-z0-9]*=)|&(?![A-Za-z0-9#]))*+"  # (in a value, `&b=2` is the text `&b=2`)
_TEXT = rf"(?:[^\x00-\x1f\x7f-\x9f<&\ufdd0-\ufdef\ufffe\uffff]++|{_REFERENCE}|&(?![A-Za-z0-9#]))*+"
_SPACE = r"[ \t\n]*+"  # (possessive, as every repeat here: a hostile seed makes no regex go back and forth)
# the head, in Pocket's order (libxml2 reads nothing after an early `</html>`), then the lists
_HEAD = re.compile(
    rf"{_SPACE}(?:<!DOCTYPE html>{_SPACE})?(?:<html>{_SPACE})?(?:<!--[^<>\-\x00\r]*+-->{_SPACE})?"
    rf'(?:<head>{_SPACE}(?:<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" ?/?>{_SPACE})?'
    rf"(?:<title>[^<&\x00\r]*+</title>{_SPACE})?</head>{_SPACE})?(?:<body>)?"
)
_TOKEN = re.compile(
    rf'{_SPACE}(?:<li><a href="({_VALUE})" time_added="({_VALUE})" tags="({_VALUE})">({_TEXT})</a></li>'
    rf"|<h1>({_TEXT})</h1>|</?ul>)"
)
_SPACES = re.compile(_SPACE)
_END = re.compile(rf"{_SPACE}(?:</body>{_SPACE})?(?:</html>{_SPACE})?")
_ENTITY = re.compile(_REFERENCE)
# past these, libxml2 reads otherwise (it drops a text of 10 MB, stops at 256 nested elements): the parser's to read
_PIECE_MOST = 1_000_000
_CHARACTER = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&#039;": "'"}


def pocket_rows(text: str, heading: Callable[[str], str | None], start: int = 0, end: int | None = None) -> list[tuple] | None:
    """The rows of a document in Pocket's shape, as `html._rows` makes them (`heading`: a
    heading's text as a section), or None. With `start` (where a line starts) or `end` (where
    one ends): the rows of that part only, as the whole's (None if it is not in the shape)."""
    rows: list[tuple] = []
    whole = end is None
    end = len(text) if whole else end
    if start:  # (the section in force there: the last heading before it, when what is before is in the shape)
        position = counted = start
        heading_at = text.rfind("<h1>", 0, start)
        section = heading(_decoded(text[heading_at + 4 : text.find("</h1>", heading_at, start)])) if heading_at != -1 else None
    else:
        position = counted = _HEAD.match(text, 0, end).end()
        section = None
    line, last_line, column = 1 + text.count("\n", 0, position), 0, 0
    depth = 0  # (of lists: Pocket's are not nested)
    while (match := _TOKEN.match(text, position, end)) is not None:  # (piece after piece, nothing between)
        if match.end() - position > _PIECE_MOST:
            return None
        position = match.end()
        kind = match.lastindex
        if kind is None:
            depth = depth + 1 if match[0].endswith("<ul>") else max(depth - 1, 0)
            if depth > 1:
                return None
            continue
        at = match.start(kind)
        line += text.count("\n", counted, at)
        counted = at
        if kind == 5:
            section = heading(_decoded(match[5]))
            continue
        href = _decoded(match[1]).strip()
        if not href:
            continue  # (not a link: no row, nor a column)
        column = column + 1 if line == last_line else 1
        last_line = line
        added = _decoded(match[2])
        rows.append((href, line, column, _decoded(match[4]), section, _decoded(match[3]), added or None))
    return rows if rows and (_END if whole else _SPACES).fullmatch(text, position, end) else None


def begins_in_shape(text: str) -> bool:
    """Whether the document's head and first piece are in Pocket's shape (a quick look, before a
    long export's text is handed to a child process)."""
    return _TOKEN.match(text, _HEAD.match(text).end()) is not None


def _decoded(value: str) -> str:
    return _ENTITY.sub(lambda match: _CHARACTER[match[0]], value) if "&" in value else value

