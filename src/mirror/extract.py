"""Captured bytes -> article: text, Markdown and metadata (trafilatura, pypdf).

Runs in worker processes: `extract_capture` reads its record from the WARC
file itself, so only a file offset crosses the process boundary.
"""

from __future__ import annotations

import io
import json
import logging
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from ._charset import legacy_chinese
from ._sniff import sniff
from .warc import WarcLocation, read_payload

__all__ = ["Extraction", "clean_text", "count_words", "decode_html", "extract", "extract_capture"]

MIN_WORDS = 30  # fewer than this and a page has no article to read

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:['’][A-Za-z]+)?")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-]+)""", re.I)
_WESTERN = {"iso-8859-1", "latin1", "latin-1", "l1", "windows-1252", "cp1252", "us-ascii", "ascii"}  # decode any bytes
_HTML_LANG = re.compile(r"""<html[^>]*\blang\s*=\s*["']?([A-Za-z]{2,3})""", re.I)
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")
_GLUED = re.compile(r"[A-Za-z0-9\u00c0-\u024f]{2}")
_LAZY_ATTRS = ("data-src", "data-original", "data-actualsrc", "data-lazy-src")
# Image markers: Tai Xuan Jing symbols (U+1D306..U+1D319), printable so trafilatura
# keeps them, and absent from the text of real pages (a page that has them gets no markers)
_MARK_OPEN, _MARK_CLOSE = "\U0001d306", "\U0001d307"
_MARK_DIGITS = "".join(chr(0x1D310 + i) for i in range(10))
_TO_MARK_DIGITS = str.maketrans("0123456789", _MARK_DIGITS)
_FROM_MARK_DIGITS = str.maketrans(_MARK_DIGITS, "0123456789")
_IMAGE_MARK = re.compile(f"{_MARK_OPEN}([{_MARK_DIGITS}]+){_MARK_CLOSE}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but \t and \n

logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


def _widen_regex_cache(size: int = 10_000) -> None:
    """dateparser (htmldate's date parsing) compiles more patterns per page than the
    `regex` module's 500-entry cache holds, so every page recompiled them: about 30% of
    extraction time. A larger cache is kept for the life of the worker."""
    try:
        import regex._main as regex_main

        regex_main._MAXCACHE = max(regex_main._MAXCACHE, size)
    except (ImportError, AttributeError):
        pass


_widen_regex_cache()

DATE_LANGUAGES = ["en", "zh", "ja", "ko", "fr", "de", "es", "pt", "it", "ru", "nl"]


def _narrow_date_parser() -> None:
    """htmldate hands written-out dates ("March 3, 2012") to dateparser with every one of
    its ~200 locales applicable, and dateparser then tests each locale on each string:
    half of all extraction time. Limited to the languages of the pages we read, the dates
    found on the quality corpora are the same (bench/quality.py) at about 60% of the cost.
    Numeric and ISO dates never reach dateparser."""
    try:
        from functools import lru_cache

        import htmldate.extractors as extractors

        default = extractors.get_external_parser

        @lru_cache(maxsize=None)
        def narrowed():
            from dateparser import DateDataParser

            parser = default()
            settings = getattr(parser, "_settings", None)  # htmldate's own settings, kept
            return DateDataParser(languages=DATE_LANGUAGES, settings=settings) if settings else parser

        extractors.get_external_parser = narrowed
    except (ImportError, AttributeError):
        pass


_narrow_date_parser()


@dataclass
class Extraction:
    status: str  # archived (there is text to read) or no_text
    kind: str  # html, pdf, text, other
    title: str | None = None
    author: str | None = None
    date: str | None = None
    sitename: str | None = None
    description: str | None = None
    language: str | None = None
    tags: str | None = None
    text: str | None = None
    markdown: str | None = None
    word_count: int = 0
    images: list[str] = field(default_factory=list)  # absolute URLs the article shows

    def as_row(self) -> dict:
        row = asdict(self)
        row["images"] = json.dumps(self.images) if self.images else None
        return row


def extract_capture(archive_dir: str | Path, location: WarcLocation, url: str) -> Extraction:
    """Extract the response record at `location` (what a pool worker runs)."""
    headers, body = read_payload(Path(archive_dir), location)
    return extract(body, url, headers.get_header("Content-Type"))


def extract(body: bytes, url: str, content_type: str | None = None) -> Extraction:
    kind = sniff(body, content_type)
    if kind == "pdf":
        return _extract_pdf(body)
    if kind == "text":
        text = decode_html(body, content_type).strip()
        return _finish(Extraction(status="archived", kind="text", text=text, markdown=text))
    if kind == "html":
        return _extract_html(body, url, content_type)
    return Extraction(status="no_text", kind="other")


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """Decode without mojibake: UTF-8 if valid, else the declared charset, else detection.

    Headers and <meta charset> are often wrong (UTF-8 bytes labelled gb2312,
    GBK bytes labelled UTF-8, a server's default ISO-8859-1 on a GB2312 page), so a
    declaration only counts if it decodes the bytes cleanly, and a Western
    single-byte one (which decodes anything) yields to bytes that read as
    Chinese. GB2312 and GBK are read as their superset GB18030.
    """
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = []
    if content_type and "charset=" in content_type.lower():
        declared.append(content_type.lower().split("charset=")[-1].split(";")[0].strip(" \"'"))
    match = _META_CHARSET.search(body[:4096])
    if match:
        declared.append(match[1].decode("ascii", "ignore").lower())
    for charset in declared:
        charset = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030"}.get(charset, charset)
        if charset.replace("_", "-") in _WESTERN:
            continue
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            continue
    chinese = legacy_chinese(body)
    if chinese is not None:
        return chinese
    for charset in declared:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            continue
    from trafilatura.utils import decode_file

    return decode_file(body)


def count_words(text: str) -> int:
    """Han, kana and Hangul characters each count as a word; Latin words as one."""
    return len(_CJK.findall(text)) + len(_LATIN_WORD.findall(_CJK.sub(" ", text)))


def _extract_html(body: bytes, url: str, content_type: str | None) -> Extraction:
    """`text` and metadata are trafilatura's default extraction; `markdown` adds links,
    emphasis and images to that same article.

    trafilatura's own options for links, formatting and images change which blocks it
    takes for the article (link-heavy teasers, figure blocks, a spacing loss next to
    links), and measured against hand-marked pages its default choice is the cleanest
    (bench/quality.py). So the text comes from the default choice, and the Markdown
    from a second, fast pass with links and formatting on, in which each <img> has left a
    small marker; that pass is kept only when it holds the same article as the text,
    otherwise the Markdown is the text's own tree with its headings, lists, tables and
    code. The page is parsed once, and metadata (the costly part) found once.
    """
    from trafilatura import bare_extraction, extract_metadata
    from trafilatura.settings import Extractor
    from trafilatura.utils import load_html

    html = decode_html(body, content_type)
    tree = load_html(html)
    document = None
    if tree is not None:
        options = Extractor(tables=True, comments=True, with_metadata=True, url=url)  # trafilatura's defaults
        try:
            document = bare_extraction(tree, url=url, options=options)  # works on a copy of the tree
        except Exception:  # noqa: BLE001 - a page trafilatura cannot read has no text, not a crash
            document = None
    has_text = document is not None and document.body is not None and "".join(document.body.itertext()).strip()
    if not has_text:
        meta = None
        try:
            meta = extract_metadata(tree if tree is not None else html, default_url=url)
        except Exception:  # noqa: BLE001
            pass
        return Extraction(
            status="no_text",
            kind="html",
            title=getattr(meta, "title", None) or _html_title(html),
            description=getattr(meta, "description", None),
            sitename=getattr(meta, "sitename", None),
            language=_language(html, ""),
        )
    article = _serialize([document.body], markdown=False)
    text = "\n".join(filter(None, [article, _serialize([document.commentsbody], markdown=False)]))
    markdown, images = _markdown(tree, html, url, article)
    markdown = "\n".join(filter(None, [markdown or _serialize([document.body], markdown=True), _serialize([document.commentsbody], markdown=True)]))
    tags = [*(document.tags or []), *(document.categories or [])]
    result = Extraction(
        status="archived",
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
    )
    return _finish(result)


SAME_ARTICLE = 0.9  # share of the Markdown's words that must be the text's, and of the text's in the Markdown


def _markdown(tree, html: str, url: str, text: str) -> tuple[str | None, list[str]]:
    """The article (`text` without comments) as Markdown with links, emphasis and images,
    and the image URLs it shows; (None, []) when the pass with links on takes a different
    article."""
    from trafilatura import bare_extraction
    from trafilatura.settings import Extractor

    marked: list[tuple[str, str]] = []
    if _MARK_OPEN not in html:
        _mark_images(tree, marked)
    options = Extractor(formatting=True, links=True, tables=True, comments=False, fast=True, url=url)
    try:
        document = bare_extraction(tree, url=url, options=options)
    except Exception:  # noqa: BLE001
        return None, []
    if document is None or document.body is None:
        return None, []
    parts = [document.body]
    _space_links(document.body)
    if not _same_article(_IMAGE_MARK.sub("", _serialize(parts, markdown=False)), text):
        return None, []
    shown: list[str] = []
    markdown = _IMAGE_MARK.sub(
        lambda m: _markdown_image(marked, int(m[1].translate(_FROM_MARK_DIGITS)), url, shown), _serialize(parts, markdown=True)
    )
    return markdown, shown


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


def _same_article(candidate: str, text: str) -> bool:
    """Whether two renderings hold the same article: most words of each are in the other."""
    from collections import Counter

    ours, theirs = Counter(_WORD.findall(candidate)), Counter(_WORD.findall(text))
    common = sum((ours & theirs).values())
    return common >= SAME_ARTICLE * max(sum(ours.values()), 1) and common >= SAME_ARTICLE * max(sum(theirs.values()), 1)


def _serialize(trees: list, markdown: bool) -> str:
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


def _extract_pdf(body: bytes) -> Extraction:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata or {}
    except (PdfReadError, ValueError, KeyError, TypeError, OSError):
        return Extraction(status="no_text", kind="pdf")
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), None)
    title = (getattr(info, "title", None) or "").strip() or first_line
    result = Extraction(
        status="archived",
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
    for name in ("title", "author", "date", "sitename", "description", "language", "tags", "text", "markdown"):
        setattr(result, name, clean_text(getattr(result, name)))
    result.word_count = count_words(result.text or "")
    if result.word_count < MIN_WORDS:
        result.status = "no_text"
    return result


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
    from trafilatura.xml import _md_link

    if index >= len(images):
        return ""
    src, alt = images[index]
    absolute = urldefrag(urljoin(base, src)).url if src else ""
    if not absolute.startswith(("http://", "https://")):
        return ""
    if absolute not in shown:
        shown.append(absolute)
    return _md_link(" ".join(alt.split()), absolute, image=True)


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
    return " ".join(match[1].split()) or None if match else None


def reindex(archive, workers: int | None = None, on_page=None) -> dict[str, int]:
    """Re-extract every captured page from its WARC record (no network), then rebuild search.

    Returns counts by resulting status.
    """
    from collections import Counter

    from .fetch import extraction_pool, safe_extract

    counts: Counter = Counter()
    pages = archive.captured_pages()
    batch: list[tuple[str, Extraction]] = []
    with extraction_pool(workers) as pool:
        futures = [(url, pool.submit(safe_extract, str(archive.path), location, final)) for url, final, location in pages]
        for url, future in futures:
            extraction = future.result()
            batch.append((url, extraction))
            counts[extraction.status] += 1
            if on_page:
                on_page(url, extraction)
            if len(batch) >= 200:  # a transaction per batch, not per page
                archive.save_extractions(batch)
                batch = []
    archive.save_extractions(batch)
    counts["indexed"] = archive.rebuild_index()
    return dict(counts)
