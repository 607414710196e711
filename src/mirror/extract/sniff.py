"""What a body is when its Content-Type says nothing useful: the WHATWG MIME sniffing rules.

Old servers send no Content-Type, or `text/plain` / `application/octet-stream`, for HTML
pages; browsers sniff the bytes and show the page, and so do we. The patterns are those of
https://mimesniff.spec.whatwg.org/#identifying-a-resource-with-an-unknown-mime-type, and a
leading BOM or complete `<!-- comments -->` are skipped before them, as 2005-era Chinese
pages often open with a comment.
"""

from __future__ import annotations

import re

__all__ = ["sniff"]

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
