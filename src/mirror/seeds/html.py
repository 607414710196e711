"""HTML seeds: saved pages and the Netscape bookmark export every browser writes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import lxml.html

from .._types import Link
from .imports import Element, ExportRow, as_links, skip_comments, source_lines

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
SECTION_MOST = 1000  # characters of a heading kept as the section of the links under it
_NOT_SPACE = re.compile(r"\S")
_PARSER = lxml.etree.HTMLParser(encoding="utf-8")
_NETSCAPE = re.compile(r"<!DOCTYPE\s+NETSCAPE-Bookmark-file", re.IGNORECASE)
# a bookmark: <DT>, its <A ...>, its title up to </A> (which holds no other bookmark's <DT>), not
# followed by a </DT>; plain character classes, so that a file of unclosed ones is read in linear time
_BOOKMARK_DT = re.compile(r"(<dt>\s*<a\b[^<>]*>[^<]*(?:<(?!/a>|dt\b)[^<]*)*</a>)(?!\s*</dt>)", re.IGNORECASE)
_DD = re.compile(r"(<dd>[^<]*)(?=<(?!/dd>)|\Z)", re.IGNORECASE)  # (its text runs to a "<": no shorter match)


def parse_html(text: str, seed: str) -> list[Link]:
    """Every <a href> with its text as title and its folder or heading as section (Pocket's
    export and the bookmark file keep tags and dates as attributes)."""
    data = _closed(text).encode("utf-8")
    root = _root(data)
    if root is None:
        return []
    anchors, headings = _anchors(root)
    lines = source_lines(anchors, data, lambda again: _linked(_root(again)))
    return as_links(_rows(root, anchors, headings, lines), seed)


def html_title(text: str) -> str | None:
    """A page's or bookmark file's own title: its <title>, else its first <h1>."""
    root = _root(_closed(text).encode("utf-8"))
    if root is None:
        return None
    for element in (next(root.iter("title"), None), next(root.iter("h1"), None)):
        if element is not None and (name := _name(element)):
            return name
    return None


def _root(data: bytes) -> Element | None:
    try:
        # plain elements, not lxml.html's: their Python class is looked up at each one made (a fifth of the time)
        return lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None


def _anchors(root: Element) -> tuple[list[Element], dict[Element, Element | None]]:
    """The <a href> elements, and each one's last heading that ends before it: one walk of the
    document (an XPath `preceding::` per anchor would read it once per link). Where no heading
    holds a link or another heading (nearly always), that is the last heading that starts before
    it, and one event an element does (a third of the time of two)."""
    anchors: list[Element] = []
    nearest: dict[Element, Element | None] = {}
    last = None
    if any(next(heading.iterdescendants("a", *_HEADINGS), None) is not None for heading in root.iter(*_HEADINGS)):
        for event, element in lxml.etree.iterwalk(root, events=("start", "end"), tag=("a", *_HEADINGS)):
            if element.tag == "a":
                if event == "start" and (element.get("href") or "").strip():
                    anchors.append(element)
                    nearest[element] = last
            elif event == "end":
                last = element
        return anchors, nearest
    # (the check above read each heading's own elements, once: none holds another, or it stopped at one that does)
    for element in root.iter("a", *_HEADINGS):
        if element.tag != "a":
            last = element
        elif (element.get("href") or "").strip():
            anchors.append(element)
            nearest[element] = last
    return anchors, nearest


def _linked(root: Element | None) -> list[Element]:
    """The <a href> elements, in order."""
    return [] if root is None else [a for a in root.iter("a") if (a.get("href") or "").strip()]


def _rows(root: Element, anchors: list[Element], headings: dict[Element, Element | None], lines: list[int]) -> Iterator[ExportRow]:
    """The anchors' rows (on their `lines`), made as they are taken: each link's column counts the links before it on its line."""
    per_line: dict[int, int] = {}
    named: dict[Element | None, str | None] = {}  # heading -> its text, read once however many links follow it
    folders = next(root.iter("dl"), None) is not None  # a bookmark file's folders (Pocket's export has none)
    for anchor, line in zip(anchors, lines, strict=True):
        per_line[line] = column = per_line.get(line, 0) + 1
        title = (anchor.text or "") if len(anchor) == 0 else _text(anchor)  # (no child: its text is all of it)
        section = _section(anchor, headings[anchor], named, folders)
        get = anchor.get  # Pocket's export and the Netscape bookmark file keep tags and dates as attributes
        yield ExportRow((get("href") or "").strip(), line, column, title, section, get("tags"), get("time_added") or get("add_date"))


def _closed(text: str) -> str:
    """A browser's bookmark file with each bookmark's <DT> (and <DD>) closed. Browsers never close
    them, and libxml2 nests each in the one before: past 256 levels it stops reading, without a
    word (a folder of 300 bookmarks kept 251). A folder's <DT> keeps its <DL> inside."""
    if not _NETSCAPE.match(text, skip_comments(text)):
        return text
    return _DD.sub(r"\1</dd>", _BOOKMARK_DT.sub(r"\1</dt>", text))


def _section(anchor: Element, heading_before: Element | None, named: dict[Element | None, str | None], folders: bool = True) -> str | None:
    """The innermost bookmark folder (<DT><H3>name</H3><DL>...) or nearest heading."""
    for ancestor in anchor.iterancestors("dl") if folders else ():
        previous = ancestor.getprevious()
        if previous is not None and previous.tag == "dt":
            previous = next(previous.iter("h3"), None)
        if previous is not None and previous.tag in _HEADINGS:
            return _name(previous)
        parent = ancestor.getparent()
        if parent is not None and parent.tag == "dt":
            heading = next(parent.iter("h3"), None)
            if heading is not None:
                return _name(heading)
    if heading_before not in named:
        named[heading_before] = None if heading_before is None else _name(heading_before)
    return named[heading_before]


def _name(heading: Element) -> str | None:
    """A heading's words as a section's name, its first SECTION_MOST characters, read only as far
    as they go (read whole, a heading that holds the page, in each of 250 nested ones, took half
    a minute for a 4 MB file): past SECTION_MOST + 1 characters that are not spaces, the rest
    can only lengthen the last word."""
    return _section_name(heading.itertext())  # (the same text as `_text`'s, in order)


def _section_name(texts: str | Iterable[str]) -> str | None:
    """Text (or its pieces) as a section's name: its words, the first SECTION_MOST characters."""
    pieces: list[str] = []
    left = SECTION_MOST + 1
    for piece in [texts] if isinstance(texts, str) else texts:
        for match in _NOT_SPACE.finditer(piece):
            left -= 1
            if not left:
                pieces.append(piece[: match.end()])
                break
        else:
            pieces.append(piece)
            continue
        break
    return " ".join("".join(pieces).split())[:SECTION_MOST].rstrip() or None


def _text(element: Element) -> str:
    """Its text and its descendants' (lxml.html's `text_content()`)."""
    text: str = element.xpath("string()")
    return text
