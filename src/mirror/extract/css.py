"""What stylesheets and pages load, read without fetching: the URLs in CSS and in a page's
`<link rel=stylesheet>`, `<style>` and style attributes, and CSS rewritten to the archive.

Pure parsing, so that extraction finds a page's stylesheets on the tree it parses anyway
(`requisites` fetches them) and the plugin rewrites what it serves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import tinycss2
from lxml import etree

from .._util.text import decode
from ..urls import web_url

__all__ = ["MAX_CSS_BYTES", "css_references", "decode_css", "is_css", "page_requisites", "rewrite_css", "tree_requisites"]

# A real site's stylesheet is far smaller; a bigger one is archived but not parsed or rewritten.
MAX_CSS_BYTES = 2 * 1024 * 1024
# What every reference in CSS starts with (`url(`, `@import`), escapes included: a cheap filter.
_LOADS = re.compile(r"url|@import|\\", re.I)


def _loads(css: str) -> bool:
    """Whether `_LOADS` matches `css`, mostly without it: a case-insensitive regex scans slowly,
    `lower()` and `in` do not. Only İ and ı match an ASCII letter of ours ("i") under re.I
    without `lower()` making them that letter; text holding them asks the regex."""
    lower = css.lower()
    if "url" in lower or "@import" in lower or "\\" in css:
        return True
    return ("\u0130" in css or "\u0131" in css) and _LOADS.search(css) is not None


def _walk(tokens, visit: Callable) -> None:
    """Call `visit(tokens, index)` on every component value, depth first."""
    for index, token in enumerate(tokens):
        visit(tokens, index)
        for child in (getattr(token, "content", None), getattr(token, "arguments", None)):  # blocks, functions
            if isinstance(child, list):
                _walk(child, visit)


def _references(tokens) -> list[tuple[list, int, str]]:
    """(token list, index, url) of every `url(…)` and `@import "…"` in parsed CSS."""
    found = []
    names = set()  # tokens of @namespace rules: a namespace is a name, never fetched

    def visit(tokens, index) -> None:
        token = tokens[index]
        if id(token) in names:
            return
        if token.type == "at-keyword" and token.lower_value == "namespace":
            for following in tokens[index + 1 :]:
                if following.type == "literal" and following.value == ";":
                    break
                names.add(id(following))
        elif token.type == "url":
            found.append((tokens, index, token.value))
        elif token.type == "function" and token.lower_name == "url":
            strings = [t for t in token.arguments if t.type == "string"]
            if strings:
                found.append((tokens, index, strings[0].value))
        elif token.type == "at-keyword" and token.lower_value == "import":
            following = [t for t in tokens[index + 1 :] if t.type not in ("whitespace", "comment")]
            if following and following[0].type == "string":
                found.append((tokens, tokens.index(following[0]), following[0].value))

    _walk(tokens, visit)
    return found


_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_NAMESPACE = re.compile(r"@namespace\b[^;]*;?", re.I)
_REFERENCE = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)|@import\s+(?:"([^"]*)"|'([^']*)')""", re.I)


# An escape inside a reference (`url("a\"b")`), or one that could spell a letter of
# `url` or `@import` (`\75 rl(`, `\u\r\l(`).
_ESCAPE_IN_REFERENCE = re.compile(r"""url\(\s*(?:"[^"]*|'[^']*|[^)'"]*)\\|@import[^;]*\\""", re.I)
_KEYWORD_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})|([^0-9a-fA-F\r\n]))")
_KEYWORD_LETTERS = frozenset("urlimportURLIMPORT")


def _referenced(css: str) -> list[str]:
    """The references in `css` as written. Without escapes a regex finds what the
    tokenizer would, twenty times faster (pages carry big inline stylesheets)."""
    if "\\" in css and (_ESCAPE_IN_REFERENCE.search(css) or _escapes_keyword(css)):
        # an escape in a reference, or one spelling its keyword: only a real tokenizer reads
        # them right. Icon fonts' `content: "\f101"` are everywhere and need neither.
        return [url for _, _, url in _references(_parse(css))]
    plain = _COMMENT.sub("", css) if "/*" in css else css
    plain = _NAMESPACE.sub("", plain) if "@" in plain else plain  # a style attribute has neither
    return [match[match.lastindex or 0] for match in _reference_matches(plain)]  # one alternative matched: the last group set


def _reference_matches(css: str) -> Iterator[re.Match]:
    """`_REFERENCE.finditer(css)`, with the regex tried only where `url(` or `@import` starts:
    its case-insensitive scan of a page's big inline stylesheets cost more than the rest of
    listing its requisites. `lower()` keeps every index and finds what re.I finds, except
    with İ (which lowers to two characters) or ı (which re.I takes for "i"): those take the scan."""
    if "\u0130" in css or "\u0131" in css:
        yield from _REFERENCE.finditer(css)
        return
    lower = css.lower()
    position, url, imports = 0, lower.find("url("), lower.find("@import")
    while url >= 0 or imports >= 0:
        start = url if imports < 0 or 0 <= url < imports else imports
        match = _REFERENCE.match(css, start)
        if match is not None:
            yield match
        position = match.end() if match is not None else start + 1
        if url >= 0 and url < position:
            url = lower.find("url(", position)
        if imports >= 0 and imports < position:
            imports = lower.find("@import", position)


def _escapes_keyword(css: str) -> bool:
    for match in _KEYWORD_ESCAPE.finditer(css):
        code, char = match.groups()
        if char is None:
            value = int(code, 16)
            char = chr(value) if value < 0x110000 else ""
        if char in _KEYWORD_LETTERS:
            return True
    return False


def _parse(css: str) -> list:
    return tinycss2.parse_component_value_list(css, skip_comments=True)


def css_references(css: str, base: str) -> list[str]:
    """The http(s) URLs a stylesheet loads: @import, fonts, background images."""
    urls = []
    for url in _referenced(css):
        absolute = web_url(url, base)
        if absolute and absolute not in urls:
            urls.append(absolute)
    return urls


def rewrite_css(css: str, base: str, local: Callable[[str], str | None]) -> str:
    """The stylesheet with each reference replaced by `local(absolute url)`, or
    dropped (an empty `url()`) when that returns None: nothing left points at the web."""
    tokens = _parse(css)
    for parent, index, url in _references(tokens):
        if url.strip().lower().startswith("data:"):
            continue  # self-contained: loads nothing
        absolute = web_url(url, base)
        target = local(absolute) if absolute else None
        replacement = tinycss2.ast.URLToken(0, 0, target or "", "url(" + _css_string(target or "") + ")")
        if parent[index].type == "string":  # @import "x.css"
            replacement = tinycss2.ast.StringToken(0, 0, target or "", _css_string(target or ""))
        parent[index] = replacement
    return tinycss2.serialize(tokens)


def _css_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ") + '"'


def page_requisites(html: str, base: str) -> list[str]:
    """Stylesheets a page links, and what its `<style>` blocks and style attributes load."""
    import lxml.html

    try:
        tree = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    return tree_requisites(tree, base)


_STYLE_ATTRIBUTES = etree.XPath("//*/@style", smart_strings=False)  # plain strings: no link back to the tree


def tree_requisites(tree, base: str) -> list[str]:
    """`page_requisites` of a page already parsed (extraction's tree: one parse per page)."""
    elements: dict[str, list] = {"base": [], "link": [], "style": []}
    for element in tree.iter("base", "link", "style"):  # one walk of a big tree, not three
        elements[element.tag].append(element)
    base_href = next((b.get("href") for b in elements["base"] if b.get("href")), None)
    if base_href:
        base = web_url(base_href, base) or base
    urls: dict[str, None] = {}  # in order, once each
    for link in elements["link"]:
        if "stylesheet" in (link.get("rel") or "").lower().split() and link.get("href"):
            url = web_url(link.get("href"), base)
            if url:
                urls[url] = None
    styles = [style.text for style in elements["style"] if style.text]
    styles += _STYLE_ATTRIBUTES(tree)
    if _loads("\n".join(styles)):  # tinycss2 is slow: parse only CSS that loads something
        for css in styles:
            if _loads(css):
                urls.update(dict.fromkeys(css_references(css, base)))
    return list(urls)


def is_css(content_type: str | None, url: str) -> bool:
    kind = (content_type or "").split(";")[0].strip().lower()
    return kind == "text/css" or (kind in ("", "text/plain", "application/octet-stream") and urlsplit(url).path.endswith(".css"))


def decode_css(body: bytes, content_type: str | None) -> str:
    """CSS text: the header's charset, else @charset, else UTF-8 (bad bytes replaced)."""
    charset = None
    if content_type and "charset=" in content_type.lower():
        charset = content_type.lower().split("charset=", 1)[1].split(";")[0].strip(" \"'")
    elif body.startswith(b'@charset "'):
        charset = body[10:].split(b'"', 1)[0].decode("ascii", "replace")
    text = decode(body, charset, "replace")
    return body.decode("utf-8", "replace") if text is None else text
