"""HTML seeds: saved pages and the Netscape bookmark export every browser writes."""

from __future__ import annotations

import lxml.html

from .._types import Link
from .imports import Row, links_of

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


def parse_html(text: str, seed: str) -> list[Link]:
    """Every <a href> with its text as title and its folder or heading as section."""
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (lxml.etree.ParserError, ValueError):
        return []
    rows: list[Row] = []
    per_line: dict[int, int] = {}
    headings = _headings_before_anchors(root)
    named: dict = {}  # heading -> its text, read once however many links follow it
    for anchor in root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not href:
            continue
        line = anchor.sourceline or 0
        per_line[line] = per_line.get(line, 0) + 1
        # Pocket's export and the Netscape bookmark file keep tags and dates as attributes
        rows.append((href, line, per_line[line], anchor.text_content(), _section(anchor, headings.get(anchor), named),
                     anchor.get("tags"), anchor.get("time_added") or anchor.get("add_date")))
    return links_of(rows, seed)


def _headings_before_anchors(root) -> dict:
    """Each <a> -> the last heading that ends before it, in one pass over the document.

    (An XPath `preceding::` per anchor would read the document once per link.)
    """
    nearest: dict = {}
    last = None
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "start" and element.tag == "a":
            nearest[element] = last
        elif event == "end" and element.tag in _HEADINGS:
            last = element
    return nearest


def _section(anchor: lxml.html.HtmlElement, heading_before, named: dict) -> str | None:
    """The innermost bookmark folder (<DT><H3>name</H3><DL>...) or nearest heading."""
    for ancestor in anchor.iterancestors("dl"):
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
