"""A reading list as a book (EPUB 3, ebooklib): one chapter per archived article in the list's
order, its sections as parts, the archived images embedded, each chapter headed by its title,
author, date and source URL, a table of contents, and each chapter's language set so that CJK text
renders with CJK fonts. What the article says is sanitised (nh3) as the reader's view is. Without a
list, the whole archive: every reading list a part, in turn, its sections within it, each article
once (where a list first links it)."""

from __future__ import annotations

import hashlib
import html
import mimetypes
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .._enums import PageStatus
from .._util.files import replaced_whole
from ..store.queries import latest_resource, warc_location, with_markdown
from ..warc import WarcError, read_payload

__all__ = ["EpubError", "EpubSummary", "export_epub", "reading_lists"]

_WEB = {"http", "https"}
_IMG = re.compile(r"<img\b[^>]*>", re.I)
_SRC = re.compile(r'\bsrc="([^"]*)"', re.I)
_ALT = re.compile(r'\balt="([^"]*)"', re.I)
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
    seen: set[str] = set()
    entries = [with_markdown(e) for e in entries if not (e["url"] in seen or seen.add(e["url"]))]
    if not entries:
        if seed is None:
            raise EpubError("the archive has no archived article yet (`mirror fetch LIST` first)")
        raise EpubError(f"reading list {seed!r} has no archived article yet (`mirror fetch {seed}` first)")
    language = Counter(e["language"] or "en" for e in entries).most_common(1)[0][0]
    book = epub.EpubBook()
    book.set_identifier("mirror-" + hashlib.sha1((seed or "\0whole archive").encode()).hexdigest()[:16])
    book.set_title(Path(seed).stem if seed is not None else f"Reading lists ({', '.join(Path(s).stem for s in reading_lists(db))})"[:200])
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
    byline = " · ".join(html.escape(v) for v in (entry["author"], entry["date"], entry["sitename"]) if v)
    head = f"<h1>{html.escape(entry['title'] or url)}</h1>"
    if byline:
        head += f'<p class="mirror-source">{byline}</p>'
    head += f'<p class="mirror-source">{source} (saved {html.escape(entry["fetched_at"] or "")})</p>'
    return head + body


def _images(db, archive_dir: Path, book, entry: dict, images: dict[str, str], summary: EpubSummary) -> str:
    """The article as sanitised HTML, its archived images embedded, the others a note with their alt text."""
    import nh3
    from ebooklib import epub
    from markdown_it import MarkdownIt

    from ..urls import web_url

    markdown = entry["markdown"] or ""
    if entry["title"] and markdown.startswith(f"# {entry['title']}\n"):
        markdown = markdown.split("\n", 1)[1]  # the chapter's head shows the title
    cleaned = nh3.clean(MarkdownIt("commonmark").enable("table").render(markdown), url_schemes=_WEB)
    base = entry["final_url"] or entry["url"]

    def image(match: re.Match) -> str:
        src = _SRC.search(match[0])
        alt = html.unescape(_ALT.search(match[0])[1]) if _ALT.search(match[0]) else ""
        url = web_url(html.unescape(src[1]), base) if src else None
        if url and url not in images:
            row = latest_resource(db, url)
            media = (row["content_type"] or "").split(";")[0].strip() if row else ""
            if row is not None and media.startswith("image/"):
                try:
                    _, content = read_payload(archive_dir, warc_location(row))
                except (WarcError, OSError):
                    content = None
                if content:
                    name = f"images/{len(images) + 1}{mimetypes.guess_extension(media) or '.img'}"
                    book.add_item(epub.EpubItem(uid=f"image-{len(images) + 1}", file_name=name, media_type=media, content=content))
                    images[url] = name
                    summary.images += 1
        if url in images:
            return f'<img src="{html.escape(images[url])}" alt="{html.escape(alt)}"/>'
        summary.missing_images += 1
        return f"<em>[image not archived{': ' + html.escape(alt) if alt else ''}]</em>"

    return _IMG.sub(image, cleaned)
