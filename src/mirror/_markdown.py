"""The article as Markdown for reading, and as plain text, from trafilatura's trees.

One trafilatura pass with links and formatting on gives both: every <img> of the page
has left a small text marker in the tree (trafilatura's own `images` option would change
which blocks it takes for the article); the markers that end up in the article become
Markdown images, and the text drops links, emphasis and markers.
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin

__all__ = ["mark_images", "render_article", "serialize"]

_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")  # one CJK character, or a run of other letters and digits
_GLUED = re.compile(r"[A-Za-z0-9\u00c0-\u024f]{2}")
_LAZY_ATTRS = ("data-src", "data-original", "data-actualsrc", "data-lazy-src")
# Image markers: Tai Xuan Jing symbols (U+1D306..U+1D319), printable so trafilatura
# keeps them, and absent from the text of real pages (a page that has them gets no markers)
_MARK_OPEN, _MARK_CLOSE = "\U0001d306", "\U0001d307"
_MARK_DIGITS = "".join(chr(0x1D310 + i) for i in range(10))
_TO_MARK_DIGITS = str.maketrans("0123456789", _MARK_DIGITS)
_FROM_MARK_DIGITS = str.maketrans(_MARK_DIGITS, "0123456789")
_IMAGE_MARK = re.compile(f"{_MARK_OPEN}([{_MARK_DIGITS}]+){_MARK_CLOSE}")


def mark_images(tree, html: str) -> list[tuple[str, str]]:
    """Leave a marker after every <img> of `tree` (see `_mark_images`); the (source, alt)
    of each, by marker number. No markers on a page whose text has marker characters itself."""
    marked: list[tuple[str, str]] = []
    if _MARK_OPEN not in html:
        _mark_images(tree, marked)
    return marked


def render_article(body, comments, marked: list[tuple[str, str]], url: str) -> tuple[str, str, list[str]]:
    """(text, Markdown, image URLs shown) of an article extracted with links and
    formatting on from a tree with image markers: the text without links, emphasis or
    markers; the Markdown with them, the markers become images. Takes the trees apart."""
    from lxml.etree import strip_tags

    _resolve_links([body, comments], url)
    for tree in (body, comments):
        if tree is not None:
            _space_links(tree)
    shown: list[str] = []
    markdown = _IMAGE_MARK.sub(
        lambda m: _markdown_image(marked, int(m[1].translate(_FROM_MARK_DIGITS)), url, shown), serialize([body], markdown=True)
    )
    tail = _IMAGE_MARK.sub("", serialize([comments], markdown=True))
    for tree in (body, comments):  # the Markdown is written: unwrap in place rather than copy
        if tree is not None:
            strip_tags(tree, "ref", "hi")
    text = _IMAGE_MARK.sub("", serialize([body, comments], markdown=False))
    return text, "\n".join(filter(None, [markdown, tail])), shown


def _resolve_links(trees: list, url: str) -> None:
    """Make the article's link targets absolute as trafilatura would with the page URL
    given (it would do so for every link of the page, most of which it then drops)."""
    from trafilatura.utils import safe_base_url, safe_relative_url

    base = url and safe_base_url(url)
    if not base:
        return
    for tree in trees:
        for ref in tree.iter("ref") if tree is not None else ():
            target = ref.get("target")
            if target:
                ref.set("target", safe_relative_url(base, target) or target)


def _space_links(tree) -> None:
    """Put back the space trafilatura loses before a link that follows loose text in a
    block ("from the<ref>Official Blog</ref>"): between two Latin letters or digits."""
    for ref in tree.iter("ref"):
        previous = ref.getprevious()
        before = previous.tail if previous is not None else ref.getparent().text
        if before and ref.text and _GLUED.match(before[-1] + ref.text[0]):
            if previous is not None:
                previous.tail = before + " "
            else:
                ref.getparent().text = before + " "
        if ref.tail and ref.text and _GLUED.match(ref.text[-1] + ref.tail[0]):
            ref.tail = " " + ref.tail


def serialize(trees: list, markdown: bool) -> str:
    """trafilatura's own txt (or Markdown) rendering of an extracted article and its comments.

    For plain text, links and emphasis are unwrapped first (their words stay), since
    trafilatura writes links as Markdown even in its txt output.
    """
    from copy import deepcopy

    from lxml.etree import strip_tags
    from trafilatura.utils import normalize_unicode
    from trafilatura.xml import xmltotxt

    rendered = []
    for tree in trees:
        if tree is None:
            continue
        if not markdown and (tree.find(".//ref") is not None or tree.find(".//hi") is not None):
            tree = deepcopy(tree)
            strip_tags(tree, "ref", "hi")
        rendered.append(normalize_unicode(xmltotxt(tree, markdown)).strip())
    joined = "\n".join(r for r in rendered if r)
    return joined if markdown else re.sub(r"\n[ \t]*(?=\n)", "", joined).strip()


def _mark_images(tree, images: list[tuple[str, str]]) -> None:
    """Put a marker after every <img> of `tree` (after its link, if it is in one: a link
    holding only an image would be dropped as boilerplate), noting its source and alt
    text in `images`.

    The source is the lazy-loading one where there is one (WeChat and zhihu keep the
    real image in data-src / data-original, and a placeholder in src).
    """
    after: dict = {}
    for img in tree.iter("img"):
        src = next((img.get(a) for a in _LAZY_ATTRS if img.get(a)), None) or img.get("src") or ""
        images.append((src.strip(), img.get("alt") or ""))
        marker = f"{_MARK_OPEN}{str(len(images) - 1).translate(_TO_MARK_DIGITS)}{_MARK_CLOSE}"
        anchor = next(img.iterancestors("a"), None)
        after.setdefault(anchor if anchor is not None else img, []).append(marker)
    for element, markers in after.items():
        element.tail = "".join(markers) + (element.tail or "")


def _markdown_image(images: list[tuple[str, str]], index: int, base: str, shown: list[str]) -> str:
    """The Markdown for marked image `index`, noting its URL in `shown`; nothing for
    images that are not http(s) (inline data, scripts)."""
    if index >= len(images):
        return ""
    src, alt = images[index]
    absolute = urldefrag(urljoin(base, src)).url if src else ""
    if not absolute.startswith(("http://", "https://")):
        return ""
    if absolute not in shown:
        shown.append(absolute)
    alt = re.sub(r"([\\\[\]])", r"\\\1", " ".join(alt.split()))
    if any(c in absolute for c in " <>()"):  # CommonMark's angle-bracket destination
        absolute = "<" + absolute.replace("<", "%3C").replace(">", "%3E") + ">"
    return f"![{alt}]({absolute})"
