"""Captured bytes -> article: text, Markdown and metadata (trafilatura, pypdf).

Runs in worker processes: `extract_capture` reads its record from the WARC
file itself, so only a file offset crosses the process boundary.
"""

from __future__ import annotations

import functools
import io
import logging
import re
from pathlib import Path

from .._types import Extraction, PageStatus, WarcLocation
from .._util.segment import index_values
from .._util.text import decode_entities
from ..warc import read_payload
from .charset import decode_html
from .css import tree_requisites
from .figures import mark_images
from .images import document_base
from .markdown import flatten_inline_code, render_article
from .sniff import sniff
from .tables import unwrap_layout_tables

__all__ = ["Extraction", "clean_text", "count_words", "decode_html", "extract", "extract_capture", "extract_plain_capture"]

MIN_WORDS = 30  # fewer than this and a page has no article to read

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:['’][A-Za-z]+)?")
_HTML_LANG = re.compile(r"""<html[^>]*\blang\s*=\s*["']?([A-Za-z]{2,3})""", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but \t and \n

logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


DATE_LANGUAGES = ["en", "zh", "ja", "ko", "fr", "de", "es", "pt", "it", "ru", "nl"]


def _narrow_date_parser() -> None:
    """htmldate hands written-out dates ("March 3, 2012") to dateparser with every one of its
    ~200 locales applicable, and dateparser then loads each locale's data and compiles its
    patterns: ~2.5 s more CPU for each worker's first pages (htmldate 1.11 sends few strings
    there after that). Limited to the languages of the pages we read, the dates found on the
    corpus pages are the same. Numeric and ISO dates never reach dateparser. htmldate makes its
    parser once and keeps it (`get_external_parser`); `languages` is dateparser's public
    attribute, the one its own language detection sets."""
    try:
        from htmldate.extractors import get_external_parser

        get_external_parser().languages = list(DATE_LANGUAGES)
    except (ImportError, AttributeError):
        pass


_narrow_date_parser()


def _plain_element_lookup() -> None:
    """lxml.html picks each element's Python class (FormElement, InputElement, ...) in a
    Python method called every time trafilatura touches an element (~9% of a profile of
    extraction). trafilatura's parser gets lxml's C lookup instead, with the same HtmlElement
    class (text_content, drop_tree, ...) for every element; neither trafilatura, justext nor
    htmldate use the form classes. The articles are identical on all 544 corpus pages."""
    try:
        from lxml import etree, html
        from trafilatura.utils import HTML_PARSER

        lookup = etree.ElementDefaultClassLookup(
            element=html.HtmlElement, comment=html.HtmlComment, pi=html.HtmlProcessingInstruction, entity=html.HtmlEntity
        )
        HTML_PARSER.set_element_class_lookup(lookup)
    except (ImportError, AttributeError):
        pass


_plain_element_lookup()


def extract_capture(archive_dir: str | Path, location: WarcLocation, url: str, stylesheets: bool = False) -> Extraction:
    """Extract the response record at `location` (what a pool worker runs)."""
    headers, body = read_payload(Path(archive_dir), location)
    return extract(body, url, headers.get_header("Content-Type"), stylesheets)


def extract_plain_capture(archive_dir: str | Path, location: WarcLocation) -> Extraction:
    """The plain text of the page at `location`, in time linear in its size: what a page
    whose extraction ran past its deadline keeps (see `_pool.safe_extract`). Boilerplate
    and all; no Markdown beyond the text, no images."""
    headers, body = read_payload(Path(archive_dir), location)
    content_type = headers.get_header("Content-Type")
    if sniff(body, content_type) != "html":
        return Extraction(status=PageStatus.NO_TEXT, kind="other")
    from lxml.html import HtmlElement

    html = decode_html(body, content_type)
    tree = parse_html(html)
    if tree is None:
        return Extraction(status=PageStatus.NO_TEXT, kind="html", title=_html_title(html))
    for element in [e for e in tree.iter(*_NOT_TEXT) if isinstance(e, HtmlElement)]:
        element.drop_tree()
    for element in tree.iter(*_BLOCKS):  # each block on a line of its own
        element.tail = "\n" + (element.tail or "")
    lines = (" ".join(line.split()) for line in tree.text_content().splitlines())
    text = "\n".join(line for line in lines if line)
    result = Extraction(status=PageStatus.ARCHIVED, kind="html", title=_html_title(html), text=text, markdown=text, language=_language(html, text))
    return _finish(result)


_NOT_TEXT = ("script", "style", "noscript", "template", "head", "svg", "math")
_BLOCKS = ("p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "section", "article", "table", "dd", "dt")


def extract(body: bytes, url: str, content_type: str | None = None, stylesheets: bool = False) -> Extraction:
    """The article in a capture; with `stylesheets`, also what an HTML page's CSS needs
    fetched (`Extraction.stylesheets`), from the same parse."""
    kind = sniff(body, content_type)
    if kind == "pdf":
        return _extract_pdf(body)
    if kind == "text":
        text = decode_html(body, content_type).strip()
        return _finish(Extraction(status=PageStatus.ARCHIVED, kind="text", text=text, markdown=text))
    if kind == "html":
        return _extract_html(body, url, content_type, stylesheets)
    return Extraction(status=PageStatus.NO_TEXT, kind="other")


def parse_html(html: str):
    """trafilatura's parse of a page, as one document.

    libxml2 ends the document at a stray `</html>` (a server-side include's footer, common in
    Chinese CMS pages) and starts a second root element with the rest of the page, which
    trafilatura never reads: on one corpus page the whole article. A browser reads that rest
    into the body (HTML's "after after body" rule), and so does this."""
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return None
    rest = [e for e in tree.itersiblings() if isinstance(e.tag, str)]
    body = tree.find("body") if rest else None
    if body is None:
        return tree
    for stray in rest:
        for part in list(stray):
            body.extend(list(part) if part.tag in ("head", "body") else [part])
    return tree


def count_words(text: str) -> int:
    """Han, kana and Hangul characters each count as a word; Latin words as one."""
    return len(_CJK.findall(text)) + len(_LATIN_WORD.findall(_CJK.sub(" ", text)))


def _extract_html(body: bytes, url: str, content_type: str | None, stylesheets: bool = False) -> Extraction:
    """`text`, `markdown` and metadata from one trafilatura pass: its default content
    choice (tables, comments, fallback extractors) with links and formatting kept.

    `text` is that article made plain (links and emphasis unwrapped, their words kept);
    `markdown` keeps them, and the images the article holds, from a marker each <img> left
    in the tree (trafilatura's own `images` option widens the article to figure blocks).
    One pass instead of a plain one plus a Markdown one: on the corpus the text scores the
    same against ground truth (bench/quality.py) at about two thirds of the CPU
    (bench/extract_cost.py). Metadata is found on the tree before it is marked.
    """
    from trafilatura import bare_extraction, extract_metadata
    from trafilatura.settings import Document

    html = decode_html(body, content_type)
    tree = parse_html(html)
    document: Document | None = None
    meta: Document | None = None
    requisites: list[str] = []
    base = url
    declared = None
    if tree is not None:
        base = document_base(tree, url)
        declared = _declared_canonical(tree)
        if stylesheets:  # before extraction alters the tree
            requisites = tree_requisites(tree, url)
        options = _options()
        try:  # as bare_extraction(with_metadata=True) finds it, before the images are marked
            meta = extract_metadata(tree, url, options.date_params, options.fast, options.author_blacklist)
        except Exception:  # noqa: BLE001 - a page without readable metadata still has its text
            meta = None
        unwrap_layout_tables(tree)  # a page laid out in tables reads as its paragraphs, not as rows of cells
        try:
            marked = mark_images(tree, html)
        except Exception:  # noqa: BLE001 - a page whose pictures cannot be placed keeps its text
            tree, marked = parse_html(html), []
        flatten_inline_code(tree)
        try:
            extracted = bare_extraction(tree, options=options)  # works on a copy of the tree
            document = extracted if isinstance(extracted, Document) else None  # (not as_dict)
        except Exception:  # noqa: BLE001 - a page trafilatura cannot read has no text, not a crash
            document = None
    article, comments = (document.body, document.commentsbody) if document is not None else (None, None)
    if article is None or not "".join(article.itertext()).strip():
        return Extraction(
            status=PageStatus.NO_TEXT,
            kind="html",
            title=getattr(meta, "title", None) or _html_title(html),
            description=getattr(meta, "description", None),
            sitename=getattr(meta, "sitename", None),
            language=_language(html, ""),
            stylesheets=requisites,
        )
    text, markdown, images = render_article(article, comments, marked, base)
    document = meta if meta is not None else Document()
    tags = [*(document.tags or []), *(document.categories or [])]
    result = Extraction(
        status=PageStatus.ARCHIVED,
        kind="html",
        title=document.title or _html_title(html),
        author=document.author,
        date=document.date,
        sitename=document.sitename,
        description=document.description,
        language=_language(html, text),
        tags=", ".join(dict.fromkeys(t for t in tags if t)) or None,
        text=text,
        markdown=markdown,
        images=images,
        stylesheets=requisites,
        canonical=_canonical(declared or getattr(meta, "url", None), url, base),
    )
    return _finish(result)


def _declared_canonical(tree) -> str | None:
    """`<link rel="canonical" href>` as written (trafilatura's metadata drops a relative one)."""
    for link in tree.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split() and (link.get("href") or "").strip():
            return link.get("href")
    return None


def _canonical(declared: str | None, url: str, base: str | None = None) -> str | None:
    """The page's own URL as it declares it (relative to the page's, as browsers read it),
    normalized; None when it is the URL it came from, or not a web address."""
    from urllib.parse import urljoin

    from ..urls import normalize

    try:
        absolute = urljoin(base or url, declared.strip()) if declared else ""
        if not absolute.startswith(("http://", "https://")):
            return None
        canonical = normalize(absolute)
    except ValueError:
        return None
    return None if canonical in (url, normalize(url)) else canonical


@functools.cache
def _options():
    """trafilatura's defaults (tables, comments, fallbacks) plus links and formatting; no
    URL, so that it does not resolve every link of the page (`render_article` resolves those
    of the article): the URL serves nothing else once metadata is found. Made once per
    process (reading trafilatura's settings costs ~0.5 ms); extraction never changes it."""
    from trafilatura.settings import Extractor

    return Extractor(formatting=True, links=True, tables=True, comments=True, output_format="txt")


def _extract_pdf(body: bytes) -> Extraction:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata  # (None: no title or author)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError):
        return Extraction(status=PageStatus.NO_TEXT, kind="pdf")
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), None)
    title = (getattr(info, "title", None) or "").strip() or first_line
    result = Extraction(
        status=PageStatus.ARCHIVED,
        kind="pdf",
        title=title,
        author=(getattr(info, "author", None) or "").strip() or None,
        text=text,
        markdown=text,
        language=_language("", text),
    )
    return _finish(result)


def clean_text(value: str | None) -> str | None:
    """Drop terminal control characters (an archived page must not drive the reader's
    terminal); keep newlines and tabs, and make every line break a newline."""
    if value is None:
        return None
    return _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


def _finish(result: Extraction) -> Extraction:
    for name in ("title", "author", "sitename"):  # names a page escaped twice (`&amp;raquo;`) read as their characters
        setattr(result, name, decode_entities(getattr(result, name)))
    for name in ("title", "author", "date", "sitename", "description", "language", "tags", "text", "markdown"):
        setattr(result, name, clean_text(getattr(result, name)))
    result.word_count = count_words(result.text or "")
    result.status = PageStatus.NO_TEXT if result.word_count < MIN_WORDS else PageStatus(result.status)
    if result.status == PageStatus.ARCHIVED:  # segmented here, in the worker, not by the writer
        result.indexed_from = (result.title, result.text, result.author, result.sitename)
        result.search_index = index_values(*result.indexed_from)
    return result


def _language(html: str, text: str) -> str | None:
    if text:
        sample = text[:5000]
        cjk = len(_CJK.findall(sample))
        if cjk >= 10 and cjk >= 0.1 * len("".join(sample.split())):
            return "ja" if len(_KANA.findall(sample)) > cjk * 0.1 else "zh"
    match = _HTML_LANG.search(html[:4096])
    if match:
        return match[1].lower()
    if text and len(_LATIN_WORD.findall(text[:5000])) >= 20:
        return "en"
    return None


def _html_title(html: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title>", html[:20000], re.I | re.S)
    return " ".join(match[1].split()) or None if match else None  # (its references decoded by `_finish`, once)
