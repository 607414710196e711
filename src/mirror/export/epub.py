"""A reading list as a book (EPUB 3, ebooklib): one chapter per archived article in the list's
order, its sections as parts, the archived images embedded, each chapter headed by its title,
author, date and source URL, a table of contents, and each chapter's language set so that CJK text
renders with CJK fonts. What the article says is sanitised (nh3) as the reader's view is, and
what EPUBCheck (the validator every store and reader relies on) refuses never goes in: a link whose
href sanitising removed (`javascript:`, `mailto:`) is its text alone, an image is embedded by what
its bytes are, only in the formats every reader shows (EPUB 3's core media types), and an SVG only
when it runs and loads nothing. The book's title is the list's own (its `# heading`). Without a
list, the whole archive: every reading list a part, in turn, its sections within it, each article
once (where a list first links it)."""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .._enums import PageStatus
from .._util.files import replaced_whole
from .._util.text import readable_date
from ..store.queries import Row, with_markdown
from ._images import archived_image

__all__ = ["EpubError", "EpubSummary", "export_epub", "reading_lists"]

_WEB = {"http", "https"}
_IMG = re.compile(r"<img\b[^>]*>", re.I)
_SRC = re.compile(r'\bsrc="([^"]*)"', re.I)
_ALT = re.compile(r'\balt="([^"]*)"', re.I)
_HREF = re.compile(r'(<a\b[^>]*?)\shref="([^"]*)"', re.I)
_HREFLESS = re.compile(r"<a\b(?![^>]*\shref=)[^>]*>(.*?)</a>", re.S | re.I)  # (nh3's output: no <a> inside another)
# what every EPUB 3 reading system shows (EPUB 3.3, core media types); AVIF, BMP, HEIC, TIFF would need a fallback
CORE_IMAGES = {"image/gif", "image/jpeg", "image/png", "image/svg+xml", "image/webp"}
_STYLE = "body { line-height: 1.6; } .mirror-source { font-size: 0.85em; color: #555; } img { max-width: 100%; }"


class EpubError(ValueError):
    """The book cannot be made (no such reading list, nothing archived in it); the message says why."""


@dataclass
class EpubSummary:
    chapters: int = 0
    images: int = 0
    missing_images: int = 0


def reading_lists(db) -> list[str]:
    return [row[0] for row in db.execute("select distinct seed from links order by seed")]


def export_epub(db, archive_dir: Path, out: Path, seed: str | None = None) -> EpubSummary:
    """Write reading list `seed` (None: every reading list, the whole archive) as the EPUB `out`."""
    from ebooklib import epub

    if seed is not None and seed not in reading_lists(db):
        raise EpubError(f"no reading list {seed!r} in this archive (`mirror links` names them)")
    entries = list(
        db.query(
            "select links.seed as reading_list, links.section, pages.* from links join pages on pages.url = links.url "
            "where (links.seed = :seed or :seed is null) and pages.status = :archived order by links.seed, links.line, links.col",
            {"seed": seed, "archived": PageStatus.ARCHIVED.value},
        )
    )
    first: dict[str, Row] = {}  # a page listed twice: where it is first
    for entry in entries:
        first.setdefault(entry["url"], entry)
    entries = [with_markdown(e) for e in first.values()]
    if not entries:
        if seed is None:
            raise EpubError("the archive has no archived article yet (`mirror fetch LIST` first)")
        raise EpubError(f"reading list {seed!r} has no archived article yet (`mirror fetch {seed}` first)")
    language = Counter(e["language"] or "en" for e in entries).most_common(1)[0][0]
    book = epub.EpubBook()
    book.set_identifier("mirror-" + hashlib.sha1((seed or "\0whole archive").encode()).hexdigest()[:16])
    if seed is not None:
        title = db.execute("select title from seeds where seed = ?", [seed]).fetchone() if db["seeds"].exists() else None
        book.set_title((title and title[0]) or Path(seed).stem)
    else:
        book.set_title(f"Reading lists ({', '.join(Path(s).stem for s in reading_lists(db))})"[:200])
    book.set_language(language)
    book.add_author("mirror")
    style = epub.EpubItem(uid="style", file_name="style.css", media_type="text/css", content=_STYLE.encode())
    book.add_item(style)
    summary = EpubSummary()
    images: dict[str, str] = {}  # archived image URL -> its file in the book
    toc: list = []
    for number, entry in enumerate(entries, 1):
        chapter = epub.EpubHtml(title=entry["title"] or entry["url"], file_name=f"chapter-{number:04d}.xhtml", lang=entry["language"] or language)
        chapter.content = _chapter(entry, _images(db, archive_dir, book, entry, images, summary))
        chapter.add_item(style)
        book.add_item(chapter)
        summary.chapters += 1
        parts = toc
        if seed is None:  # the whole archive: each reading list a part, its sections within it
            parts = _part(toc, entry["reading_list"], chapter)
        if entry["section"]:
            parts = _part(parts, entry["section"], chapter)
        parts.append(chapter)
    book.toc = toc
    book.spine = ["nav", *[item for item in book.get_items() if isinstance(item, epub.EpubHtml)]]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    out.parent.mkdir(parents=True, exist_ok=True)
    with replaced_whole(out) as temporary:  # a stopped export leaves no book that looks whole
        epub.write_epub(str(temporary), book)
    return summary


def _part(toc: list, title: str, chapter) -> list:
    """The chapters of the part `title` at the end of `toc`, opened at `chapter` if it is a new one."""
    from ebooklib import epub

    if not (toc and isinstance(toc[-1], tuple) and toc[-1][0].title == title):
        toc.append((epub.Section(title, href=chapter.file_name), []))  # a part opens at its first chapter
    return toc[-1][1]


def _chapter(entry: dict, body: str) -> str:
    """The chapter's head (title, author, date, source) and its article."""
    url = entry["url"]
    source = f'<a href="{html.escape(url)}">{html.escape(url)}</a>' if url.split(":", 1)[0].lower() in _WEB else html.escape(url)
    byline = " · ".join(v for v in (html.escape(entry["author"] or ""), _time(entry["date"]), html.escape(entry["sitename"] or "")) if v)
    head = f"<h1>{html.escape(entry['title'] or url)}</h1>"
    if byline:
        head += f'<p class="mirror-source">{byline}</p>'
    saved = f" (saved {_time(entry['fetched_at'])})" if entry["fetched_at"] else ""
    head += f'<p class="mirror-source">{source}{saved}</p>'
    return head + body


def _time(value: str | None) -> str:
    """A date as people read it (`2026-11-28 12:13 UTC`, not `2026-11-28T12:13:46+00:00`), the
    ISO value kept in `<time datetime>` where it is one; a site's own date text as it is."""
    if not value:
        return ""
    try:
        datetime.fromisoformat(value.strip())
    except ValueError:
        return html.escape(value)
    return f'<time datetime="{html.escape(value.strip())}">{html.escape(readable_date(value))}</time>'


def _images(db, archive_dir: Path, book, entry: dict, images: dict[str, str], summary: EpubSummary) -> str:
    """The article as sanitised HTML, its archived images embedded, the others a note with their alt text."""
    import nh3
    from ebooklib import epub
    from markdown_it import MarkdownIt

    from ..urls import web_url

    markdown = entry["markdown"] or ""
    if entry["title"] and markdown.startswith(f"# {entry['title']}\n"):
        markdown = markdown.split("\n", 1)[1]  # the chapter's head shows the title
    base = entry["final_url"] or entry["url"]
    cleaned = nh3.clean(MarkdownIt("commonmark").enable("table").render(markdown), url_schemes=_WEB)

    def href(match: re.Match) -> str:  # a relative link leads to the page it pointed at on the web (in the book it leads nowhere)
        url = web_url(html.unescape(match[2]), base)
        return f'{match[1]} href="{html.escape(url)}"' if url else match[1]

    cleaned = _HREFLESS.sub(r"\1", _HREF.sub(href, cleaned))

    def image(match: re.Match) -> str:
        src = _SRC.search(match[0])
        alt = html.unescape(found[1]) if (found := _ALT.search(match[0])) else ""
        url = web_url(html.unescape(src[1]), base) if src else None
        problem = "image not archived"
        if url and url not in images:
            archived = archived_image(db, archive_dir, url)
            problem = archived.problem or ("" if archived.media_type in CORE_IMAGES else "image in a format e-readers do not show")
            if not problem:
                name = f"images/{len(images) + 1}{archived.extension}"
                book.add_item(epub.EpubItem(uid=f"image-{len(images) + 1}", file_name=name, media_type=archived.media_type, content=archived.body))
                images[url] = name
                summary.images += 1
        if url in images:
            return f'<img src="{html.escape(images[url])}" alt="{html.escape(alt)}"/>'
        summary.missing_images += 1
        return f"<em>[{problem}{': ' + html.escape(alt) if alt else ''}]</em>"

    return _IMG.sub(image, cleaned)
