"""What a body is when its Content-Type says nothing useful: the WHATWG MIME sniffing rules.

Old servers send no Content-Type, or `text/plain` / `application/octet-stream`, for HTML
pages; browsers sniff the bytes and show the page, and so do we. The patterns are those of
https://mimesniff.spec.whatwg.org/#identifying-a-resource-with-an-unknown-mime-type, and a
leading BOM or complete `<!-- comments -->` are skipped before them, as 2005-era Chinese
pages often open with a comment.
"""

from __future__ import annotations

import re

__all__ = ["IMAGE_EXTENSIONS", "image_type", "inert_svg", "sniff"]

_WHITESPACE = b"\t\n\x0c\r "
_BOMS = (b"\xef\xbb\xbf", b"\xfe\xff", b"\xff\xfe")
_HTML_TAGS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<meta",
    b"<link",
)  # each followed by a tag-terminating byte (space or >); <meta> and <link> open many head-less pages
_TAG_END = b" >\t\n\x0c\r"
_COMMENT = re.compile(rb"<!--.*?-->", re.S)
# bytes that never occur in text (the spec's "binary data bytes")
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_UNTRUSTED = ("", "text/plain", "application/octet-stream", "unknown/unknown", "application/unknown", "*/*")


def sniff(body: bytes, content_type: str | None) -> str:
    """The kind of a body: html, pdf, text or other.

    A declared HTML, XML or PDF type is believed; a missing, `text/plain` or
    `application/octet-stream` type is checked against the bytes.
    """
    essence = (content_type or "").split(";")[0].strip().lower()
    if "pdf" in essence:
        return "pdf"
    if "html" in essence or "xml" in essence:
        return "html"
    if essence not in _UNTRUSTED:
        return "other"
    if body[:5] == b"%PDF-":
        return "pdf"
    if _looks_like_markup(body[:4096]):
        return "html"
    if essence == "text/plain" or not _BINARY.search(body[:4096]):
        return "text" if body.strip() else "other"
    return "other"


def _looks_like_markup(head: bytes) -> bool:
    for bom in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
            if bom != _BOMS[0]:  # UTF-16: look at the text, not the bytes
                head = head.decode("utf-16-be" if bom == b"\xfe\xff" else "utf-16-le", "ignore").encode("utf-8", "ignore")
            break
    while True:
        head = head.lstrip(_WHITESPACE)
        comment = _COMMENT.match(head)
        if not comment:
            break
        head = head[comment.end() :]
    lowered = head[:32].lower()
    if lowered.startswith(b"<?xml") or lowered.startswith(b"<rss") or lowered.startswith(b"<feed"):
        return True
    return any(lowered.startswith(tag) and lowered[len(tag) : len(tag) + 1] in (b"", *(bytes([c]) for c in _TAG_END)) for tag in _HTML_TAGS) or (
        lowered.startswith(b"<!--")  # an unclosed comment in the first 4 KB: the spec counts it as HTML
    )


# Images by their bytes: the WHATWG image patterns (ICO, BMP, GIF, WebP, PNG, JPEG), and those it
# leaves to the MP4 rules (AVIF, HEIC), TIFF, JPEG XL and SVG. An archived "image" is whatever a
# server sent under an image type: an HTML error page labelled image/jpeg, a script labelled
# image/svg+xml. The exports name and embed a file by what its bytes are, never by that label.
IMAGE_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "image/avif": ".avif",
    "image/heic": ".heic",
    "image/bmp": ".bmp",
    "image/x-icon": ".ico",
    "image/tiff": ".tif",
    "image/jxl": ".jxl",
}
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"\x00\x00\x02\x00", "image/x-icon"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\xff\x0a", "image/jxl"),
    (b"\x00\x00\x00\x0cJXL \r\n\x87\n", "image/jxl"),
)
_FTYP = {b"avif": "image/avif", b"avis": "image/avif", b"heic": "image/heic", b"heix": "image/heic", b"mif1": "image/heic"}
_OUTSIDE_URL = re.compile(r"url\s*\(\s*['\"]?(?!#)", re.I)  # CSS url() of anything but a fragment of the same file
_SVG_PROLOG = re.compile(rb"\A(?:\s+|<\?xml[^>]*\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[[^\]]*\])?\s*>)*<svg[\s>/]", re.S | re.I)


def image_type(body: bytes) -> str | None:
    """The image type of `body` by its bytes (a key of IMAGE_EXTENSIONS), or None: not an image."""
    for magic, kind in _MAGIC:
        if body.startswith(magic):
            return kind
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return "image/webp"
    if body[4:8] == b"ftyp":
        return _FTYP.get(body[8:12])
    head = body[:4096].removeprefix(b"\xef\xbb\xbf")
    return "image/svg+xml" if _SVG_PROLOG.match(head) else None


def inert_svg(body: bytes) -> bool:
    """Whether an SVG is a picture only: well-formed XML that runs nothing (no script, no event
    handler, no foreign HTML) and loads nothing (no link but to its own `#fragments`, no CSS
    `url()` or `@import`), so it is safe to open on its own and to put in a book."""
    from lxml import etree

    if b"<!ENTITY" in body:
        return False  # entities would be expanded by whoever opens it: a billion laughs, a file read
    try:
        root = etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False))
    except (etree.XMLSyntaxError, ValueError):
        return False
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue  # comments and processing instructions
        name = etree.QName(element).localname.lower()
        if name in {"script", "foreignobject", "iframe", "embed", "object", "handler", "listener", "audio", "video"}:
            return False
        if name == "style" and (_OUTSIDE_URL.search(element.text or "") or "@import" in (element.text or "").lower()):
            return False
        for attribute, value in element.attrib.items():
            local = etree.QName(attribute).localname.lower()
            if local.startswith("on") or (local in {"href", "src"} and not value.strip().startswith("#")) or _OUTSIDE_URL.search(value):
                return False
    return True
