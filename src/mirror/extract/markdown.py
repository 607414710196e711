"""The article as Markdown for reading, and as plain text, from trafilatura's trees.

One trafilatura pass with links and formatting on gives both: every picture of the page
has left a small text marker in the tree (`figures`; trafilatura's own `images` option
would change which blocks it takes for the article); the markers that end up in the
article become Markdown images, captions in italics, and the text drops links, emphasis,
markers and captions.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..urls import web_url
from .figures import CAPTION, IMAGE_MARK, mark_number

__all__ = ["RenderedArticle", "flatten_inline_code", "header_rows", "render_article", "serialize"]

_WORD = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+"
)  # one CJK character, or a run of other letters and digits
_BLANK_LINE = re.compile(r"^[ \t]*\n|\n[ \t]*(?=\n|$)")
_GLUED = re.compile(r"[A-Za-z0-9\u00c0-\u024f]{2}")


def flatten_inline_code(tree) -> None:
    """Collapse the white space of `<code>` inside running text, as browsers show it.

    trafilatura writes code that holds a line break as a fenced block, even in the middle of
    a sentence ("被 ```\nMarkdown Nice\n``` 解决了"): the fence opens there and swallows the
    rest of the article, its images with it. Code standing alone (in `<pre>`, or with no text
    around it) keeps its lines.
    """
    for code in tree.iter("code"):
        if "\n" not in code.text_content() or next(code.iterancestors("pre"), None) is not None:
            continue
        previous, parent = code.getprevious(), code.getparent()
        before = previous.tail if previous is not None else parent.text if parent is not None else None
        if (before or "").strip() or (code.tail or "").strip():
            code.text = _SPACES.sub(" ", code.text) if code.text else code.text
            for inner in code.iterdescendants():
                inner.text = _SPACES.sub(" ", inner.text) if inner.text else inner.text
                inner.tail = _SPACES.sub(" ", inner.tail) if inner.tail else inner.tail


_SPACES = re.compile(r"\s+")


class RenderedArticle(NamedTuple):
    text: str  # plain: no links, emphasis, images or captions
    markdown: str
    images: list[str]  # the URLs of the images it shows, in order


def render_article(body, comments, marked: list[tuple[str, str]], url: str) -> RenderedArticle:
    """(text, Markdown, image URLs shown) of an article extracted with links and
    formatting on from a tree with image markers: the text without links, emphasis,
    markers or captions; the Markdown with them, the markers become images. Takes the trees apart."""
    from lxml.etree import strip_tags

    _resolve_links([body, comments], url)
    for tree in (body, comments):
        if tree is not None:
            _space_links(tree)
    shown: list[str] = []
    for tree in (body, comments):
        header_rows(tree, True)
    markdown, tail = serialize([body], markdown=True), serialize([comments], markdown=True)
    for tree in (body, comments):  # the text's tables are their rows alone: no `|---|` line
        header_rows(tree, False)
    if marked:
        markdown = IMAGE_MARK.sub(lambda m: _markdown_image(marked, mark_number(m), url, shown), markdown)
        tail = IMAGE_MARK.sub("", tail)
    for tree in (body, comments):  # the Markdown is written: unwrap in place rather than copy
        if tree is not None:
            strip_tags(tree, "ref", "hi")
    markdown = unindent("\n".join(filter(None, [markdown, tail])))
    text = serialize([body, comments], markdown=False)
    if not marked:  # no markers on this page: any such characters are its own text
        return RenderedArticle(text, markdown, shown)
    text = _BLANK_LINE.sub("", IMAGE_MARK.sub("", CAPTION.sub("", text))).strip()  # the lines a caption or an image held
    return RenderedArticle(text, CAPTION.sub(r"\1", markdown), shown)


def header_rows(tree, first: bool) -> None:
    """With `first`, the first row of every table of an extracted article its header row, and no
    other (trafilatura heads a table only where the page had `<th>`, at its first row of them,
    and a Markdown table without a header row is no table: CommonMark and GFM show its pipes);
    without, no header row at all."""
    if tree is None:
        return
    for table in tree.iter("table"):
        for number, row in enumerate(row for row in table if row.tag == "row"):
            for cell in row:
                if cell.tag != "cell":
                    continue
                if first and number == 0:
                    cell.set("role", "head")
                else:
                    cell.attrib.pop("role", None)


_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_MANY_BLANKS = re.compile(r"\n{3,}")


def unindent(markdown: str) -> str:
    """The page's own indentation taken off the lines: only a list's nesting (as trafilatura
    writes it, a level under the item before at most) and a code fence's lines keep theirs. The
    source's white space comes through trafilatura into the Markdown (a comment's link on a line
    of its own after eight spaces, sub-items six spaces in); under CommonMark four leading spaces
    open a code block, which shows the link's Markdown, its target with it, as text: most of what
    the Markdown had that the article has not (issue 44)."""
    lines: list[str] = []
    fenced = False
    items: list[tuple[int, int, int]] = []  # the open list items: (indent as written, as kept, where their content starts)
    for line in markdown.split("\n"):
        if fenced or _FENCE.match(line):
            fenced = fenced != bool(_FENCE.match(line))
            lines.append(line)
            continue
        body = line.lstrip(" \t")
        written = len(line) - len(body)
        if not body:
            lines.append("")
            continue
        if item := _LIST_ITEM.match(body):
            while items and items[-1][0] > written:
                items.pop()
            if items and items[-1][0] == written:
                kept = items.pop()[1]  # a sibling: where the one before it is
            else:
                kept = items[-1][2] if items else 0  # a sub-item: under the item before
            items.append((written, kept, kept + len(item[0].rstrip()) + 1))
            lines.append(" " * kept + body.rstrip())
            continue
        if written == 0 and lines and not lines[-1]:
            items.clear()  # a paragraph after the list
        lines.append(" " * min(written, items[-1][2]) + body.rstrip() if items and written else body.rstrip())
    return _MANY_BLANKS.sub("\n\n", "\n".join(lines)).strip("\n")


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
    return joined if markdown else _BLANK_LINE.sub("", joined).strip()


def _markdown_image(images: list[tuple[str, str]], index: int, base: str, shown: list[str]) -> str:
    """The Markdown for marked image `index`, noting its URL in `shown`; nothing for
    images that are not http(s) (inline data, scripts)."""
    if index >= len(images):
        return ""
    src, alt = images[index]
    absolute = web_url(src, base)
    if absolute is None:
        return ""
    if absolute not in shown:
        shown.append(absolute)
    alt = re.sub(r"([\\\[\]])", r"\\\1", " ".join(alt.split()))
    if any(c in absolute for c in " <>()"):  # CommonMark's angle-bracket destination
        absolute = "<" + absolute.replace("<", "%3C").replace(">", "%3E") + ">"
    return f"![{alt}]({absolute})"
