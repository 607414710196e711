"""Where each picture of a page goes in the tree trafilatura reads: a text marker.

trafilatura keeps text only where it reads paragraphs, and deletes `<figure>`, `<picture>`
and `<noscript>` with all they hold (and a link holding only an image, as boilerplate); its
own `images` option would change which blocks it takes for the article. So before it runs,
each picture of the page (`_images.image_source`) leaves a marker of printable characters
where trafilatura keeps text, and captions are wrapped in caption marks; `markdown` turns
the markers that reach the article into Markdown images and the captions into italics.
"""

from __future__ import annotations

import re

from .images import attribute_image, image_source, in_noscript, is_decoration, is_fallback_copy

__all__ = ["CAPTION", "IMAGE_MARK", "mark_images", "mark_number"]

# Tai Xuan Jing symbols (U+1D306..U+1D319): printable, so trafilatura keeps them, and absent
# from the text of real pages (a page that has any gets no markers)
_MARK_OPEN, _MARK_CLOSE, _CAPTION_OPEN, _CAPTION_CLOSE = "\U0001d306", "\U0001d307", "\U0001d308", "\U0001d309"
_MARK_DIGITS = "".join(chr(0x1D310 + i) for i in range(10))
_TO_MARK_DIGITS = str.maketrans("0123456789", _MARK_DIGITS)
_FROM_MARK_DIGITS = str.maketrans(_MARK_DIGITS, "0123456789")
_MARKS = (_MARK_OPEN, _MARK_CLOSE, _CAPTION_OPEN, _CAPTION_CLOSE)
_ALL_MARKS = re.compile(f"[{''.join(_MARKS)}]")
IMAGE_MARK = re.compile(f"{_MARK_OPEN}([{_MARK_DIGITS}]+){_MARK_CLOSE}")
CAPTION = re.compile(f"{_CAPTION_OPEN}(.*?){_CAPTION_CLOSE}", re.S)  # group 1: the caption's text


def mark_images(tree, html: str) -> list[tuple[str, str]]:
    """Mark where every picture of `tree` is shown (see `_mark_images`); returns the
    (source, alt) of each, by marker number. No markers on a page whose text has marker
    characters itself."""
    marked: list[tuple[str, str]] = []
    if not _has_marks(html) and not _has_marks("".join(tree.itertext())):  # (&#x1D306; too)
        _mark_images(tree, marked)
    return marked


def _has_marks(text: str) -> bool:
    """Whether `text` holds a marker character (`in`, four times: a quarter of the regular expression's cost on a whole page)."""
    return any(mark in text for mark in _MARKS)


def mark_number(match: re.Match) -> int:
    """The number of the picture an `IMAGE_MARK` match marks."""
    return int(match[1].translate(_FROM_MARK_DIGITS))


def _mark_images(tree, images: list[tuple[str, str]]) -> None:
    """Put a marker where every picture of `tree` is shown, noting its source and alt text
    in `images`.

    trafilatura keeps text only where it reads paragraphs, and deletes `<figure>`,
    `<picture>` and `<noscript>` with all they hold (and a link that holds only an image, as
    boilerplate). So a marker goes after the outermost of those around its `<img>`: in the
    text around it, or, for an image that stands alone between blocks (WeChat's `<section>`s),
    in a paragraph of its own; a `<figure>` (or a block that is one by another name: a
    Wikipedia thumb, a `wp-caption`) becomes a paragraph of its markers and one of each
    caption, moved before the first paragraph when it is the lead figure in an article's
    `<header>`. The source is what a browser would show (`image_source`); a `<noscript>`
    copy of a scripted image beside it, decorations (`is_decoration`: tracking pixels,
    hidden images, avatars, logos, icons), teasers (the thumbnail of a related post, whose
    link a headline beside it repeats) and images with nothing fetchable get no marker.
    Each element is looked at once however many images it holds (`_Page`): a page of
    thousands of images costs time in proportion.
    """
    page = _Page()
    inline: dict = {}  # element -> the markers that go in its tail
    after: dict = {}  # element holding only images -> the markers of the paragraph replacing it
    figures: dict = {}  # figure (or a figure by another name) -> the markers of the paragraph replacing it
    for img in tree.iter("img", "figure"):
        if img.tag == "figure":  # one whose picture a script inserts, named in an attribute
            if img.find(".//img") is not None or img.find(".//picture") is not None:
                continue
            src = attribute_image(img)
        else:
            src = image_source(img)
        if src is None or is_decoration(img, src) or is_fallback_copy(img, page.copies) or page.teaser(img):
            continue
        images.append((src, _ALL_MARKS.sub("", img.get("alt") or "")))
        marker = f"{_MARK_OPEN}{str(len(images) - 1).translate(_TO_MARK_DIGITS)}{_MARK_CLOSE}"
        figure = page.figure_of(img)
        if figure is not None:
            figures.setdefault(figure, []).append(marker)
            continue
        target = page.hoisted(img)
        alone = page.standing_alone(target)
        if alone is None:
            inline.setdefault(target, []).append(marker)
        elif (figure := page.figure_by_another_name(alone)) is not None:
            figures.setdefault(figure, []).append(marker)
        else:
            after.setdefault(alone, []).append(marker)
    for element, markers in inline.items():
        _put_in_tail(element, "".join(markers))
    for element, markers in after.items():  # it holds nothing but images: an empty link once they are gone
        _replace(element, _paragraphs(element, markers, []))
    for element, markers in figures.items():
        if page.in_paragraph(element):  # a figure inside a paragraph (`<p><figure>…</figure> The text…`)
            _replace(element, [_inline(markers, page.captions(element))])
            continue
        blocks = _paragraphs(element, markers, page.captions(element))
        first = page.first_paragraph_after_header(element)
        if first is None:
            _replace(element, blocks)
        else:  # the article's lead figure: before its first paragraph, where trafilatura reads
            element.drop_tree()
            for block in blocks:
                first.addprevious(block)


class _Page:
    """What the marking learns of a page's elements, each asked once: an element holding a
    thousand images is measured once, not once per image."""

    def __init__(self) -> None:
        self.copies: dict = {}  # container -> whether it shows a scripted image (`is_fallback_copy`)
        self._tables: dict = {}  # figure -> whether it holds a table
        self._blocks: dict = {}  # element -> `_block`'s measures
        self._captions: dict = {}  # element -> its caption texts
        self._leads: dict = {}  # <header> -> the article's first paragraph after it
        self._texts: dict = {}  # element -> whether it holds any text
        self._named: dict = {}  # element -> the targets of the links with text it holds

    def has_text(self, element) -> bool:
        if element not in self._texts:
            self._texts[element] = bool(element.text_content().strip())
        return self._texts[element]

    def hoisted(self, img):
        """The element a marker stands for: the image with the links, `<picture>`s and
        `<noscript>`s around it, and the inline elements around those that hold no text (a
        link around two images, one in a `<span>`), all of which trafilatura drops with it."""
        target = img
        while (parent := target.getparent()) is not None and (parent.tag in _HIDING or (parent.tag in _INLINE and not self.has_text(parent))):
            target = parent
        return target

    def standing_alone(self, target):
        """The element to replace by a paragraph of markers, when the image `target` stands
        alone between blocks (no text of a paragraph around it); else None. A `<p>` or a list
        item that holds nothing but images counts as such a place too: trafilatura drops a
        paragraph whose only other content is a link (WordPress links each image to its
        file), and a list whose items hold nothing but text markers."""
        run = target
        while (parent := run.getparent()) is not None and parent.tag in _INLINE:
            run = parent
        if parent is None or self.has_text(run):
            return None
        if parent.tag in _TEXT_BLOCKS:  # a list item holding only images gets a paragraph inside
            if self.has_text(parent) or parent.tag not in ("p", "li", "dd", "dt"):
                return None  # (a table cell keeps its marker: a paragraph in a layout table's cell changes its reading)
            return parent if parent.tag == "p" else run
        previous = run.getprevious()
        before = previous.tail if previous is not None else parent.text
        return None if (before or "").strip() or (run.tail or "").strip() else run

    def teaser(self, img) -> bool:
        """An image linking to the page that a text link beside it names, in a list item or a
        block named a card, a post or a story: the thumbnail of a related post, a most-read
        list, a front page's card (not the article's picture)."""
        link = next(img.iterancestors("a"), None)
        href = (link.get("href") or "").strip() if link is not None else ""
        if link is None or not href or href.startswith("#"):
            return False
        card = link
        for _ in range(3):
            card = card.getparent()
            if card is None or card.tag in ("body", "article", "main"):
                return False
            if card.tag != "li" and not _CARD_NAME.search(" ".join(filter(None, (card.get("class"), card.get("id"))))):
                continue  # (a Wikipedia thumb or a table of crafts links its picture and its name alike)
            if card not in self._named:
                self._named[card] = {(a.get("href") or "").strip() for a in card.iter("a") if a.text_content().strip()}
            if href in self._named[card]:
                return True
        return False

    def in_paragraph(self, element) -> bool:
        """Whether `element` stands in the text of a `<p>` (its nearest block, which holds text
        of its own besides): paragraphs of its own inside it would split that text."""
        parent = element.getparent()
        while parent is not None and parent.tag in _INLINE:
            parent = parent.getparent()
        if parent is None or parent.tag != "p":
            return False
        return bool(
            (parent.text or "").strip()
            or any((child.tail or "").strip() or (child is not element and isinstance(child.tag, str) and self.has_text(child)) for child in parent)
        )

    def figure_of(self, img):
        """The outermost `<figure>` around `img` (itself, for a `<figure>`) that holds no table."""
        ancestry = [img, *img.iterancestors("figure")] if img.tag == "figure" else list(img.iterancestors("figure"))
        for figure in reversed(ancestry):
            if figure not in self._tables:
                self._tables[figure] = figure.find(".//table") is not None
            if not self._tables[figure]:
                return figure
        return None

    def figure_by_another_name(self, element):
        """The block around a lone image that is its figure though not a `<figure>`:
        Wikipedia's `div.thumb`, WordPress's `div.wp-caption`, a `table.tr-caption-container`.
        Up to three levels up, an element named so (class or id) that shows no other image and
        holds, besides its caption, hardly any text (a credit): a block with a paragraph of the
        article in it is not a figure. trafilatura drops such blocks by their links or classes."""
        found = None
        for _ in range(3):
            element = element.getparent()
            if element is None or element.tag in _TEXT_BLOCKS or element.tag in ("body", "article", "main"):
                break
            length, shown, captions, prose = self._block(element)
            if length > 1000 or shown > 1 or prose or length - captions > _CREDIT:
                break
            if _FIGURE_NAME.search(" ".join(filter(None, (element.get("class"), element.get("id"))))):
                found = element
        return found

    def _block(self, element) -> tuple[int, int, int, bool]:
        """(its text's length, images outside <noscript>, its captions' length, whether it holds
        a paragraph of prose: a `<p>` with text that is no caption)."""
        if element not in self._blocks:
            length = len(" ".join(element.text_content().split()))
            shown = captions = 0
            prose = False
            if length <= 1000:
                shown = sum(1 for img in element.iter("img") if not in_noscript(img))
                captions = sum(len(c) for c in self.captions(element))
                prose = any(p.text_content().strip() and not _in_caption(p, element) for p in element.iter("p"))
            self._blocks[element] = (length, shown, captions, prose)
        return self._blocks[element]

    def captions(self, figure) -> list[str]:
        """The caption texts of a figure: its `<figcaption>`s, or the outermost elements whose
        class calls them a caption."""
        if figure not in self._captions:
            self._captions[figure] = _captions(figure)
        return self._captions[figure]

    def first_paragraph_after_header(self, figure):
        """For a figure in the `<header>` of an `<article>` (the lead image of news sites and
        WordPress themes, which trafilatura leaves out with the header): the first paragraph
        of prose after that header in the article, else None."""
        header = next(figure.iterancestors("header"), None)
        if header is None:
            return None
        if header not in self._leads:
            self._leads[header] = _first_paragraph_after(header) if next(header.iterancestors("article"), None) is not None else None
        return self._leads[header]


_CARD_NAME = re.compile(r"related|recommend|teaser|card|story|post|popular|most|trending|promo", re.I)


def _in_caption(element, block) -> bool:
    """Whether `element` is (inside) a caption of `block`: a `<figcaption>`, or an element below
    `block` whose class calls it one."""
    while element is not None and element is not block:
        if element.tag == "figcaption" or _CAPTION_NAME.search(element.get("class") or ""):
            return True
        element = element.getparent()
    return False


_CREDIT = 100  # characters of a figure-like block's text that are not its caption: a credit, "Enlarge"


_HIDING = frozenset({"a", "picture", "source", "noscript"})  # what trafilatura drops with the image
# elements that only style the text they hold: an image inside them is still where they are
_INLINE = frozenset(
    {"a", "abbr", "b", "big", "cite", "em", "font", "i", "mark", "picture", "small", "source", "span", "strong", "sub", "sup", "u", "noscript"}
)
# elements trafilatura reads as text: a marker in their text stays in the article
_TEXT_BLOCKS = frozenset(
    {
        "p",
        "li",
        "dd",
        "dt",
        "td",
        "th",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "caption",
        "pre",
        "code",
        "blockquote",
        "figcaption",
        "summary",
        "label",
        "button",
        "q",
    }
)


def _put_in_tail(element, text: str) -> None:
    """`text` where `element` is, in the text around it: in place of an element that holds
    nothing but the image in a paragraph or list item (trafilatura would drop an empty link
    there, and what follows it in its paragraph with it), else at the start of its tail. The line breaks and indentation of the
    source around it become one space, as a browser shows them: left as they are,
    trafilatura keeps them next to a marker, and an indented line reads as a code block."""
    previous, parent = element.getprevious(), element.getparent()
    before = previous.tail if previous is not None else parent.text if parent is not None else None
    if before and before != before.rstrip():
        trimmed = before.rstrip() + (" " if before.strip() else "")
        if previous is not None:
            previous.tail = trimmed
        else:
            parent.text = trimmed
    tail = element.tail or ""
    element.tail = text + (" " + tail.lstrip() if tail[:1].isspace() else tail)
    block = parent
    while block is not None and block.tag in _INLINE:
        block = block.getparent()
    if block is not None and block.tag in _TEXT_BLOCKS and not element.text_content().strip():
        element.drop_tree()  # its tail, the marker first, joins the text before it


_FIGURE_NAME = re.compile(r"figure|thumb|caption|image|photo|picture", re.I)
_CAPTION_NAME = re.compile(r"caption", re.I)


def _captions(figure) -> list[str]:
    """The caption texts of a figure: its `<figcaption>`s, or the outermost elements whose
    class calls them a caption."""
    found = [element for element in figure.iterdescendants() if element.tag == "figcaption"]
    if not found:
        found = [
            element
            for element in figure.iterdescendants()
            if isinstance(element.tag, str)
            and _CAPTION_NAME.search(element.get("class") or "")
            and not any(_CAPTION_NAME.search(a.get("class") or "") for a in element.iterancestors() if a is not figure)
        ]
    return [caption for caption in (" ".join(_spaced_text(e).split()) for e in found) if caption]


_APART = frozenset({"span", "div", "p", "cite", "small", "br", "li"})  # a caption and its credit, side by side


def _spaced_text(element) -> str:
    """The text of `element`, with a space where a caption's parts meet (`<span>A rack.</span>
    <span>Photo: …</span>` shows apart on the page, by its style)."""
    parts = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str) and child.tag not in _NOT_SHOWN:
            parts.append(" " if child.tag in _APART else "")
            parts.append(_spaced_text(child))
        parts.append(child.tail or "")
    return _ALL_MARKS.sub("", "".join(parts))


_NOT_SHOWN = frozenset({"script", "style", "noscript", "template"})


def _paragraphs(element, markers: list[str], captions: list[str]) -> list:
    """A paragraph of image markers, then one in italics for each caption."""
    from lxml.html import Element

    blocks = [Element("p")]
    blocks[0].text = " ".join(markers)
    for caption in captions:
        block = Element("p")
        emphasis = Element("i")
        emphasis.text = f"{_CAPTION_OPEN}{caption}{_CAPTION_CLOSE}"
        block.append(emphasis)
        blocks.append(block)
    return blocks


def _inline(markers: list[str], captions: list[str]):
    """The markers, then each caption in italics, inside a paragraph's text."""
    from lxml.etree import SubElement
    from lxml.html import Element

    span = Element("span")
    span.text = " ".join(markers) + " "
    for caption in captions:
        emphasis = SubElement(span, "i")
        emphasis.text = f"{_CAPTION_OPEN}{caption}{_CAPTION_CLOSE}"
        emphasis.tail = " "
    return span


def _first_paragraph_after(header):
    for sibling in header.itersiblings():
        for paragraph in (sibling, *sibling.iterdescendants("p")) if isinstance(sibling.tag, str) else ():
            if paragraph.tag == "p" and len(paragraph.text_content().strip()) >= 50:  # prose, not a sign-up box
                return paragraph
    return None


def _replace(element, blocks: list) -> None:
    """`blocks` in place of `element`. A `<div>` or `<section>` that held nothing else becomes
    the (one) paragraph itself: a paragraph inside one makes trafilatura drop the loose text
    that follows it (Blogger's `div.separator` before a post's first sentences)."""
    parent = element.getparent()
    if parent is None:
        return
    if (
        len(blocks) == 1
        and parent.tag in ("div", "section", "center")
        and len(parent) == 1
        and not (parent.text or "").strip()
        and not (element.tail or "").strip()
    ):
        parent.remove(element)
        parent.tag, parent.text = "p", blocks[0].text
        return
    position = parent.index(element)
    tail = element.tail
    parent.remove(element)
    for offset, block in enumerate(blocks):
        parent.insert(position + offset, block)
    if tail and tail.strip() and parent.tag not in _TEXT_BLOCKS and parent.tag not in _INLINE:
        _loose_text_as_paragraph(blocks[-1], tail)  # loose text after a paragraph: trafilatura would drop it
    else:
        blocks[-1].tail = tail


def _loose_text_as_paragraph(block, tail: str) -> None:
    """The text after `block` (up to the next block element: `<div class="wp-caption">…</div>Well,
    I guess …<em>…</em> …<p>`) made a paragraph of its own, as a browser shows it."""
    from lxml.html import Element

    paragraph = Element("p")
    paragraph.text = tail
    following = []
    for sibling in block.itersiblings():
        if isinstance(sibling.tag, str) and sibling.tag not in _INLINE and sibling.tag != "br":
            break
        following.append(sibling)
    block.addnext(paragraph)
    for sibling in following:
        paragraph.append(sibling)
