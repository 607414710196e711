"""The archive as a folder of Markdown: one file per article with YAML front matter, its archived
images saved beside it and linked relatively, and one index per reading list that is the list
itself: every link in its order and sections, an exported article linking to its file, any other
link to its original URL with what became of it (failed and why, not fetched yet, not a web page,
not in this export). It opens as an Obsidian vault. File names are the titles (Chinese kept,
characters no file system takes replaced, collisions numbered); a re-export rewrites only what
changed."""

from __future__ import annotations

import json
import mimetypes
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._enums import PageStatus
from .._util.files import write_whole
from .._util.text import strip_controls
from ..store.queries import latest_resource, warc_location, with_markdown
from ..urls import web_url
from ..warc import WarcError, read_payload
from ._select import archived_pages

__all__ = ["ExportSummary", "export_markdown"]

ASSETS = "assets"  # images, one folder per article: assets/<file stem>/<n>.<ext>
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*#^\[\]]')  # Windows' and Obsidian's (links, tags, blocks)
_IMAGE = re.compile(r"!\[((?:\\.|[^\]\\])*)\]\((<[^>\n]*>|[^)\s]*)\)")
MAX_STEM = 80  # characters of a title in its file name
_COLUMNS = "id, url, final_url, title, author, date, sitename, language, fetched_at, source, health, markdown_z, images"


@dataclass
class ExportSummary:
    articles: int = 0
    written: int = 0  # files written because they changed (articles, images and indexes)
    unchanged: int = 0
    images: int = 0
    missing_images: int = 0  # shown by an article but never archived: left as a note
    files: list[Path] = field(default_factory=list)


def export_markdown(db, archive_dir: Path, out: Path, *, seed: str | None = None, site: str | None = None, since: str | None = None) -> ExportSummary:
    """Write the archived articles (of `seed`, of `site`, captured `since` an ISO date) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    pages = [with_markdown(page) for page in archived_pages(db, _COLUMNS, seed=seed, site=site, since=since)]
    names = _file_names(pages)
    for page in pages:
        summary.articles += 1
        stem = names[page["url"]]
        body = _images(db, archive_dir, out, stem, page, summary)
        _write(out / f"{stem}.md", _front_matter(page, _origins(db, page["url"])) + body.rstrip("\n") + "\n", summary)
    for reading_list, sections in _reading_lists(db, seed, names, whole=not (site or since)).items():
        _write(out / f"{_safe_stem(Path(reading_list).stem)} (reading list).md", _index(reading_list, sections), summary)
    return summary


def _file_names(pages: list[dict]) -> dict[str, str]:
    """Each page's file stem: its title made safe, numbered after the first page with that name
    (by page id, so a re-export gives every page the name it had)."""
    taken: dict[str, int] = {}
    names = {}
    for page in pages:
        stem = _safe_stem(page["title"] or page["url"].split("://", 1)[-1])
        count = taken.get(stem.lower(), 0) + 1
        taken[stem.lower()] = count
        names[page["url"]] = stem if count == 1 else f"{stem} ({count})"
    return names


def _safe_stem(text: str) -> str:
    stem = " ".join(_UNSAFE.sub(" ", strip_controls(text)).split())[:MAX_STEM].strip(" .")
    return stem or "untitled"


def _images(db, archive_dir: Path, out: Path, stem: str, page: dict, summary: ExportSummary) -> str:
    """The article's Markdown with each archived image saved under assets/ and linked relatively;
    an image never archived becomes a note with its alt text (every image link resolves)."""
    numbers: dict[str, int] = {}

    def image(match: re.Match) -> str:
        alt, url = match[1], match[2].strip("<>")
        row = latest_resource(db, url)
        if row is None:
            summary.missing_images += 1
            return f"*[image not archived{': ' + alt if alt else ''}]*"
        number = numbers.setdefault(url, len(numbers) + 1)
        extension = mimetypes.guess_extension((row["content_type"] or "").split(";")[0].strip()) or ".bin"
        relative = f"{ASSETS}/{stem}/{number}{extension}"
        try:
            _, body = read_payload(archive_dir, warc_location(row))
        except (WarcError, OSError):
            summary.missing_images += 1
            return f"*[image not readable{': ' + alt if alt else ''}]*"
        (out / ASSETS / stem).mkdir(parents=True, exist_ok=True)
        _write(out / relative, body, summary)
        summary.images += 1
        return f"![{alt}](<{relative}>)"

    return _IMAGE.sub(image, page["markdown"] or "")


def _origins(db, url: str) -> list[dict]:
    return list(db.query("select seed, section from links where url = ? order by seed, line", [url]))


def _front_matter(page: dict, origins: list[dict]) -> str:
    """YAML front matter (each value written as JSON, which is YAML): what the article is and where it came from."""
    fields = {
        "title": page["title"],
        "url": page["url"],
        "author": page["author"],
        "date": page["date"],
        "site": page["sitename"],
        "language": page["language"],
        "captured": page["fetched_at"],
        "source": page["source"],
        "reading_lists": sorted({o["seed"] for o in origins}),
        "sections": sorted({o["section"] for o in origins if o["section"]}),
        "status": page["health"] or "archived",
    }
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items() if value not in (None, [], "")]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


Sections = list[tuple[str | None, list[str]]]  # a reading list's sections in order, each its index lines


def _reading_lists(db, seed: str | None, names: dict[str, str], *, whole: bool) -> dict[str, Sections]:
    """Each reading list's links in its own order, grouped by section, as index lines: every
    link of every list (`seed`'s alone, when given), or, when a filter other than the list chose
    the articles (not `whole`), the lists that link one of them."""
    where, values = ("where links.seed = ?", [seed]) if seed else ("", [])
    lists: dict[str, Sections] = {}
    chosen: set[str] = set()  # lists linking an exported article
    seen: set[tuple[str, str]] = set()
    for row in db.query(
        f"select links.seed, links.section, links.url, links.url_as_written, coalesce(links.title, pages.title) as title, "
        f"pages.status, pages.error, pages.error_message, pages.same_as from links "
        f"left join pages on pages.url = links.url {where} order by links.seed, links.line, links.col",
        values,
    ):
        if (row["seed"], row["url"]) in seen:  # (a list that links a page twice: once in its index)
            continue
        seen.add((row["seed"], row["url"]))
        stem = names.get(row["url"]) or names.get(row["same_as"] or "")
        chosen.update([row["seed"]] if stem else [])
        sections = lists.setdefault(row["seed"], [])
        if not sections or sections[-1][0] != row["section"]:
            sections.append((row["section"], []))
        sections[-1][1].append(_entry(row, stem))
    return {name: sections for name, sections in lists.items() if whole or name in chosen}


def _entry(link: dict, stem: str | None) -> str:
    """One link of a list as its index line: its article's file, else its original URL and what
    became of it (only http(s) URLs are links; anything else is its words)."""
    title = _label(link["title"] or stem or link["url_as_written"] or link["url"])
    if stem:
        return f"- [{title}](<{stem}.md>)"
    status, error = link["status"], link["error_message"] or link["error"]
    note = {
        PageStatus.FAILED: f"failed: {error}" if error else "failed",
        PageStatus.PENDING: "not fetched yet",
        PageStatus.SKIPPED: f"not a web page: {error}" if error else "not a web page",
        PageStatus.NO_TEXT: "saved, with no article text",
    }.get(status, "not in this export")
    original = web_url(link["url"])
    written = link["url_as_written"]
    shown = f"[{title}](<{_destination(original)}>)" if original else title if written in (None, link["title"]) else f"{title} ({_label(written)})"
    return f"- {shown} *({_label(note)})*"


def _destination(url: str) -> str:
    """A URL as a Markdown link's `<…>` destination: nothing in it ends the brackets or the line."""
    return url.replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")


def _index(reading_list: str, sections: Sections) -> str:
    lines = [f"# {reading_list}", ""]
    for section, entries in sections:
        if section:
            lines += [f"## {section}", ""]
        lines += entries
        lines.append("")
    return "\n".join(lines)


def _label(text: str) -> str:
    return re.sub(r"([\\\[\]])", r"\\\1", " ".join(strip_controls(text).split()))


def _write(path: Path, content: str | bytes, summary: ExportSummary) -> None:
    """Write `path` only when its content changed (a re-export touches nothing else)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        if path.read_bytes() == data:
            summary.unchanged += 1
            return
    except OSError:
        pass
    write_whole(path, data)  # stopped midway, an export leaves each file as it was or whole
    summary.written += 1
    summary.files.append(path)
