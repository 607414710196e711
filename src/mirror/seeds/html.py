"""HTML seeds: saved pages and the Netscape bookmark export every browser writes."""

from __future__ import annotations

import re

import lxml.html

from .._types import Link
from ._child_call import ChildCall
from .imports import TWO_CORES, Row, _fields_of, as_links, links_of

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_NETSCAPE = re.compile(r"\s*(?:<!--.*?-->\s*)*<!DOCTYPE\s+NETSCAPE-Bookmark-file", re.IGNORECASE | re.DOTALL)
_BOOKMARK_DT = re.compile(r"(<dt>\s*<a\b[^>]*>(?:(?!</a>).)*+</a>)(?!\s*</dt>)", re.IGNORECASE | re.DOTALL)
_DD = re.compile(r"(<dd>[^<]*+)(?!</dd>)", re.IGNORECASE)


def parse_html(text: str, seed: str) -> list[Link]:
    """Every <a href> with its text as title and its folder or heading as section. A long one
    (a bookmark export of 100,000 links) has its second half read in a child process meanwhile."""
    data = _closed(text).encode("utf-8")
    root = _root(data)
    if root is None:
        return []
    anchors = _anchors(root)
    if len(anchors) < TWO_CORES:
        return links_of(_rows(root, anchors, 0, len(anchors)), seed)
    half = len(anchors) * 11 // 20
    with ChildCall("mirror.seeds.html", "_fields_for_parent", data, half) as child:
        fields = _fields_of(_rows(root, anchors, 0, half))
        answer = child.result()
    rest = answer if isinstance(answer, list) and len(answer) == len(anchors) - half else _fields_of(_rows(root, anchors, half, len(anchors)))
    return as_links(fields + rest, seed)


def _root(data: bytes):
    try:
        return lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (lxml.etree.ParserError, ValueError):
        return None


def _anchors(root) -> list:
    return [anchor for anchor in root.iter("a") if (anchor.get("href") or "").strip()]


def _fields_for_parent(data: bytes, start: int) -> list:
    """(In the child process.) The Link fields of the document's links from number `start` on."""
    root = _root(data)
    anchors = _anchors(root)
    return _fields_of(_rows(root, anchors, start, len(anchors)))


def _rows(root, anchors: list, start: int, stop: int) -> list[Row]:
    """The rows of anchors[start:stop]: each link's column counts the links before it on its line."""
    per_line: dict[int, int] = {}
    for anchor in anchors[:start]:
        line = anchor.sourceline or 0
        per_line[line] = per_line.get(line, 0) + 1
    headings = _headings_before_anchors(root)
    named: dict = {}  # heading -> its text, read once however many links follow it
    folders = next(root.iter("dl"), None) is not None  # a bookmark file's folders (Pocket's export has none)
    rows: list[Row] = []
    for anchor in anchors[start:stop]:
        line = anchor.sourceline or 0
        per_line[line] = per_line.get(line, 0) + 1
        # Pocket's export and the Netscape bookmark file keep tags and dates as attributes
        title = (anchor.text or "") if len(anchor) == 0 else anchor.text_content()  # (no child: its text is all of it)
        rows.append(((anchor.get("href") or "").strip(), line, per_line[line], title, _section(anchor, headings.get(anchor), named, folders),
                     anchor.get("tags"), anchor.get("time_added") or anchor.get("add_date")))
    return rows


def _closed(text: str) -> str:
    """A browser's bookmark file with each bookmark's <DT> (and <DD>) closed. Browsers never close
    them, and libxml2 nests each in the one before: past 256 levels it stops reading, without a
    word (a folder of 300 bookmarks kept 251). A folder's <DT> keeps its <DL> inside."""
    if not _NETSCAPE.match(text):
        return text
    return _DD.sub(r"\1</dd>", _BOOKMARK_DT.sub(r"\1</dt>", text))


def _headings_before_anchors(root) -> dict:
    """Each <a> -> the last heading that ends before it, in one pass over the document.

    (An XPath `preceding::` per anchor would read the document once per link.)
    """
    nearest: dict = {}
    last = None
    for event, element in lxml.etree.iterwalk(root, events=("start", "end"), tag=("a", *_HEADINGS)):
        if event == "start" and element.tag == "a":
            nearest[element] = last
        elif event == "end" and element.tag in _HEADINGS:
            last = element
    return nearest


def _section(anchor: lxml.html.HtmlElement, heading_before, named: dict, folders: bool = True) -> str | None:
    """The innermost bookmark folder (<DT><H3>name</H3><DL>...) or nearest heading."""
    for ancestor in anchor.iterancestors("dl") if folders else ():
        previous = ancestor.getprevious()
        if previous is not None and previous.tag == "dt":
            previous = next(previous.iter("h3"), None)
        if previous is not None and previous.tag in _HEADINGS:
            return " ".join(previous.text_content().split()) or None
        parent = ancestor.getparent()
        if parent is not None and parent.tag == "dt":
            heading = next(parent.iter("h3"), None)
            if heading is not None:
                return " ".join(heading.text_content().split()) or None
    if heading_before is None:
        return None
    if heading_before not in named:
        named[heading_before] = " ".join(heading_before.text_content().split()) or None
    return named[heading_before]
