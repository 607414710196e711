"""Seed documents -> link inventory.

Reading lists come as browser "copy title + link" text, Markdown notes, text
copied from rendered web pages (table cells glued together) and HTML bookmark
exports. Every link found becomes a `Link` carrying where it came from. Here: the
files and folders named, read and decoded; their lines are parsed by `text` (or `html`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._types import COMMAND_LINE, Link
from .._util.gc import gc_paused
from . import imports
from .links import _Found, _make_link
from .names import seed_name
from .text import parse_text

__all__ = ["Inventory", "Link", "SeedError", "decode_seed", "links_from_urls", "read_seeds"]


class SeedError(Exception):
    """A source the user named cannot be read at all."""


@dataclass
class Inventory:
    links: list[Link] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seeds: list[str] = field(default_factory=list)  # every seed document read
    titles: dict[str, str] = field(default_factory=dict)  # a seed's own title (its `# heading`, its <title>)

    @property
    def pages(self) -> dict[str, list[Link]]:
        """Normalized URL -> its occurrences, in seed order."""
        pages: dict[str, list[Link]] = {}
        for link in self.links:
            pages.setdefault(link.url, []).append(link)
        return pages


def read_seeds(sources: list[Path], base: Path | None = None) -> Inventory:
    """Parse files and folders of seeds. Raises SeedError for a missing path."""
    base = (base or Path.cwd()).resolve()
    inventory = Inventory()
    for source in sources:
        if not source.exists():
            raise SeedError(f"{source}: no such file or folder")
        files = sorted(p for p in source.rglob("*") if p.is_file() and not _hidden(p, source)) if source.is_dir() else [source]
        if source.is_dir() and not files:
            inventory.warnings.append(f"{source}: folder holds no seed files")
        with gc_paused():
            for path in files:
                _read_one(path, seed_name(path, base), inventory)
    return inventory


def links_from_urls(written: list[str], seed: str = COMMAND_LINE) -> Inventory:
    """An inventory of URLs given on the command line (`mirror fetch URL...`), or of pages the user added (`seed`)."""
    inventory = Inventory(seeds=[seed] if written else [])
    for url in written:
        hit = _Found(0, len(url), url.strip(), None)
        link = _make_link(hit, seed, 0, None, None)
        # keyed by the URL itself so that earlier command-line URLs are kept
        inventory.links.append(replace(link, col=zlib.crc32(link.url.encode()) & 0x7FFFFFFF))
    return inventory


def _read_one(path: Path, name: str, inventory: Inventory) -> None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        inventory.warnings.append(f"{name}: cannot read ({exc.strerror}); skipped")
        return
    text, warning = decode_seed(data)
    if warning:
        inventory.warnings.append(f"{name}: {warning}")
    if text is None:
        return
    inventory.seeds.append(name)
    if not text.strip():
        inventory.warnings.append(f"{name}: empty, no links")
        return
    links = _parse(path, text, name, inventory.warnings.append)
    if title := _title(path, text):
        inventory.titles[name] = title
    if not links:
        inventory.warnings.append(f"{name}: no links found")
    inventory.links.extend(links)


def _parse(path: Path, text: str, name: str, warn: Callable[[str], None]) -> list[Link]:
    """The links of one seed, read as what it is: an export (JSON, CSV, a feed), HTML, or text."""
    suffix = path.suffix.lower()
    if suffix in (".json", ".csv", ".rss", ".atom", ".opml") or (suffix in (".xml", "") and imports.feed_kind(text[:2000])):
        parse = {".json": imports.parse_json, ".csv": imports.parse_csv}.get(suffix, imports.parse_feed)
        return parse(text, name, warn)
    if _looks_like_html(path, text):
        from .html import parse_html

        return parse_html(text, name)
    return parse_text(text, name)


def _title(path: Path, text: str) -> str | None:
    """The title the list gives itself (what an export names it by), for text and HTML seeds."""
    suffix = path.suffix.lower()
    if suffix in (".json", ".csv", ".rss", ".atom", ".opml", ".xml"):
        return None
    if _looks_like_html(path, text):
        from .html import html_title

        return html_title(text)
    from .text import text_title

    return text_title(text)


def decode_seed(data: bytes) -> tuple[str | None, str | None]:
    """Text of a seed file and a warning, or (None, reason) for a binary file."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace"), None
    if b"\x00" in data[:8192]:
        return None, "binary file, not a reading list; skipped"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030"), "not UTF-8; decoded as GB18030 (GBK)"
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), "not valid UTF-8 or GBK; undecodable bytes replaced"


def _looks_like_html(path: Path, text: str) -> bool:
    if path.suffix.lower() in {".html", ".htm", ".xhtml"}:
        return True
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype", "<html")) or "netscape-bookmark-file" in head


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)
