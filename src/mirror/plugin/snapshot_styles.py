"""Snapshots with their stylesheets, served from the archive.

The HTML cleaner drops `<link>` elements and `@import`s, so the styles of the
original page are collected before cleaning and put back afterwards, in their
order: archived stylesheets as `<link>`s to the resource view, `<style>` blocks
and style attributes with every `url()` rewritten to an archived copy or to
nothing. Stylesheets themselves are served rewritten the same way, so no
reference leaves the archive; the snapshot's CSP still forbids the network.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import lxml.html

from ..extract.css import decode_css, is_css, rewrite_css
from ..extract.images import document_base
from ..urls import web_url

__all__ = ["apply_styles", "collect_styles", "is_font", "is_stylesheet", "serve_css"]

FONT_TYPES = ("font/", "application/font-", "application/x-font-", "application/vnd.ms-fontobject")
FONT_EXTENSIONS = (".woff2", ".woff", ".ttf", ".otf", ".eot")


def collect_styles(tree, base: str) -> list[tuple[str, str]]:
    """("link", absolute url) and ("style", css text) in document order, before cleaning."""
    page_base = document_base(tree, base)
    styles = []
    for element in tree.iter("link", "style"):
        if element.tag == "style":
            styles.append(("style", element.text or ""))
        elif "stylesheet" in (element.get("rel") or "").lower().split() and element.get("href"):
            url = web_url(element.get("href"), page_base)
            if url:
                styles.append(("link", url))
    return styles


def apply_styles(tree, styles: list[tuple[str, str]], base: str, local: Callable[[str], str | None]) -> None:
    """Put the collected styles back into a cleaned tree, each reference made local."""
    for style in list(tree.iter("style")):
        style.drop_tree()
    for element in tree.xpath("//*[@style]"):
        element.set("style", rewrite_css(element.get("style"), base, local))
    head = tree.find("head")
    if head is None:
        head = lxml.html.Element("head")
        tree.insert(0, head)
    for kind, value in styles:
        if kind == "link":
            href = local(value)
            if href:
                head.append(lxml.html.Element("link", rel="stylesheet", href=href))
        else:
            element = lxml.html.Element("style")
            element.text = rewrite_css(value, base, local).replace("</", "<\\/")
            head.append(element)


def serve_css(body: bytes, content_type: str | None, url: str, local: Callable[[str], str | None]) -> str:
    return rewrite_css(decode_css(body, content_type), url, local)


def is_stylesheet(content_type: str | None, url: str) -> bool:
    return is_css(content_type, url)


def is_font(content_type: str | None, url: str) -> bool:
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind.startswith(FONT_TYPES):
        return True
    return kind in ("", "application/octet-stream") and urlsplit(url).path.lower().endswith(FONT_EXTENSIONS)
