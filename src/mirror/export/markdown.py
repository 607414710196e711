"""The archive as a folder of Markdown: one file per article with YAML front matter, its archived
images saved beside it and linked relatively, and one index per reading list that is the list
itself: every link in its order and sections, an exported article linking to its file, any other
link to its original URL with what became of it (failed and why, not fetched yet, not a web page,
not in this export). It opens as an Obsidian vault. File names are the titles (Chinese kept,
characters no file system takes replaced, at most ~200 bytes, Windows' device names suffixed,
collisions with any name already taken numbered); a re-export rewrites only what changed."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .._enums import PageStatus
from .._util.files import write_whole
from .._util.text import strip_controls
from ..store.queries import with_markdown
from ..urls import web_url
from ._images import archived_image
from ._select import archived_pages

__all__ = ["ExportSummary", "export_markdown"]

ASSETS = "assets"  # images, one folder per article: assets/<file stem>/<n>.<ext>
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*#^\[\]]')  # Windows' and Obsidian's (links, tags, blocks)
_IMAGE = re.compile(r"!\[((?:\\.|[^\]\\])*)\]\((<[^>\n]*>|[^)\s]*)\)")
MAX_STEM = 80  # characters of a title in its file name
MAX_STEM_BYTES = 180  # and bytes of UTF-8: with " (2)", " (reading list)" and ".md" a name stays near 200 (file systems take 255)
# Windows' device names, whatever the case or extension (CON.md, nul.txt.md): no program there opens them
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{port}{n}" for port in ("COM", "LPT") for n in (*"0123456789", "¹", "²", "³"))}
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
    names = _Names()
    stems = {page["url"]: names.take(page["title"] or page["url"].split("://", 1)[-1]) for page in pages}  # by page id: a re-export keeps them
    lists = _reading_lists(db, seed, stems, whole=not (site or since))
    indexes = {reading_list: names.take(Path(reading_list).stem, suffix=" (reading list)") for reading_list in lists}
    for page in pages:
        summary.articles += 1
        stem = stems[page["url"]]
        body = _images(db, archive_dir, out, stem, page, summary)
        origins = _origins(db, page["url"])
        _write(out / f"{stem}.md", _front_matter(page, origins) + body.rstrip("\n") + "\n", summary)
    for reading_list, sections in lists.items():
        _write(out / f"{indexes[reading_list]}.md", _index(reading_list, sections), summary)
    return summary


class _Names:
    """File stems, each unique against every name taken before it in this export (articles and
    indexes alike), as the file systems compare them: case and Unicode form aside."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def take(self, text: str, suffix: str = "") -> str:
        stem = _safe_stem(text) + suffix
        candidate, number = stem, 1
        while _key(candidate) in self._taken:
            number += 1
            candidate = f"{stem} ({number})"
        self._taken.add(_key(candidate))
        return candidate


def _key(stem: str) -> str:
    return unicodedata.normalize("NFC", stem).casefold()


def _safe_stem(text: str) -> str:
    """A title as a file name: characters no file system takes replaced, cut to MAX_STEM
    characters and MAX_STEM_BYTES bytes (at a character's end), a device name suffixed."""
    stem = " ".join(_UNSAFE.sub(" ", strip_controls(text)).split())[:MAX_STEM]
    stem = stem.encode("utf-8")[:MAX_STEM_BYTES].decode("utf-8", "ignore").strip(" .")
    if stem.split(".", 1)[0].rstrip(" ").upper() in _RESERVED:
        base, dot, rest = stem.partition(".")
        stem = f"{base.rstrip(' ')}_{dot}{rest}"
    return stem or "untitled"


def _images(db, archive_dir: Path, out: Path, stem: str, page: dict, summary: ExportSummary) -> str:
    """The article's Markdown with each archived image saved under assets/ (named by what its
    bytes are) and linked relatively; an image never archived, or whose bytes are no image,
    becomes a note with its alt text (every image link resolves)."""
    numbers: dict[str, int] = {}

    def image(match: re.Match) -> str:
        alt, url = match[1], match[2].strip("<>")
        found = archived_image(db, archive_dir, url)
        if found.media_type is None:
            summary.missing_images += 1
            return _note(found.problem, alt)
        number = numbers.setdefault(url, len(numbers) + 1)
        relative = f"{ASSETS}/{stem}/{number}{found.extension}"
        (out / ASSETS / stem).mkdir(parents=True, exist_ok=True)
        _write(out / relative, found.body, summary)
        summary.images += 1
        return f"![{alt}](<{relative}>)"

    return _IMAGE.sub(image, page["markdown"] or "")


def _note(problem: str, alt: str) -> str:
    """What stands where an image could not be: in HTML emphasis, which closes wherever it stands
    (`*[…]*` followed by a Chinese character is no emphasis under CommonMark, whose closing `*`
    after punctuation must be followed by a space or punctuation: the italics ran on)."""
    return f"<em>\\[{problem}{': ' + html.escape(alt, quote=False) if alt else ''}\\]</em>"


def _origins(db, url: str) -> list[dict]:
    return list(db.query("select seed, section, tags from links where url = ? order by seed, line", [url]))


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
        "tags": _tags(origins),
        "status": page["health"] or "archived",
    }
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items() if value not in (None, [], "")]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


def _tags(origins: list[dict]) -> list[str]:
    """The tags a bookmark service's export gave the page's links (comma-separated in `links.tags`),
    as Obsidian takes a tag: no spaces (a space would end it), no leading `#`."""
    tags: dict[str, None] = {}
    for origin in origins:
        for tag in (origin["tags"] or "").split(","):
            tag = "-".join(strip_controls(tag).lstrip("#").split())
            if tag:
                tags[tag] = None
    return list(tags)


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
