"""HTML seeds: saved pages and the Netscape bookmark export every browser writes."""

from __future__ import annotations

import lxml.html

from .._types import Link
from . import urls
from .imports import tag_list, when

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


def parse_html(text: str, seed: str) -> list[Link]:
    """Every <a href> with its text as title and its folder or heading as section."""
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (lxml.etree.ParserError, ValueError):
        return []
    links: list[Link] = []
    per_line: dict[int, int] = {}
    headings = _headings_before_anchors(root)
    for anchor in root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not href:
            continue
        line = anchor.sourceline or 0
        per_line[line] = per_line.get(line, 0) + 1
        reason = urls.skip_reason(href)
        links.append(
            Link(
                url=href if reason else urls.normalize(href),
                url_as_written=href,
                seed=seed,
                line=line,
                col=per_line[line],
                title=" ".join(anchor.text_content().split()) or None,
                section=_section(anchor, headings.get(anchor)),
                skip_reason=reason,
                # Pocket's export and the Netscape bookmark file keep these as attributes
                tags=tag_list(anchor.get("tags")),
                added=when(anchor.get("time_added") or anchor.get("add_date")),
            )
        )
    return links


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


def _section(anchor: lxml.html.HtmlElement, heading_before) -> str | None:
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
    return " ".join(heading_before.text_content().split()) or None
