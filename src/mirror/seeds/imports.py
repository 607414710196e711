"""Exports of the bookmark services people leave, read as reading lists: Pinboard's JSON, Pocket's,
Raindrop's and Instapaper's CSV (Pocket's HTML is a bookmark file: `html`), and RSS, Atom and OPML
files (each entry a link). Titles, tags and dates are kept with the link; folders, feeds and
collections are sections. A row without a URL is reported with its line, never a traceback."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from .._types import Link
from . import urls

__all__ = ["FEED", "parse_csv", "parse_feed", "parse_json", "tag_list", "when"]

FEED = re.compile(r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(rss|feed|opml|rdf:RDF)\b", re.S | re.I)
_URL_COLUMNS = ("url", "href", "link", "uri")
_TITLE_COLUMNS = ("title", "description", "name")
_TAG_COLUMNS = ("tags", "tag", "labels")
_DATE_COLUMNS = ("time_added", "created", "timestamp", "time", "date", "added", "created_at")
_SECTION_COLUMNS = ("folder", "collection", "status", "list")
Warn = Callable[[str], None]


def when(value: object) -> str | None:
    """A saved-at time as ISO: Unix seconds (Pocket, Instapaper), ISO (Pinboard, Raindrop) or RFC 822 (RSS)."""
    text = str(value or "").strip()
    if not text:
        return None
    if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
        return datetime.fromtimestamp(float(text), UTC).isoformat(timespec="seconds")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat(timespec="seconds")
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(text).isoformat(timespec="seconds")
    except (TypeError, ValueError, IndexError):
        return None


def tag_list(value: object) -> str | None:
    """Tags as one comma-separated string, whatever the service separated them with."""
    if isinstance(value, list):
        items = [str(v) for v in value]
    else:
        items = re.split(r"[,\s|]+", str(value or "")) if "," not in str(value or "") else str(value).split(",")
    items = [" ".join(t.split()) for t in items]
    return ", ".join(dict.fromkeys(t for t in items if t)) or None


def _link(href: str, seed: str, line: int, col: int, title: object, section: object, tags: object, added: object) -> Link:
    reason = urls.skip_reason(href)
    return Link(
        url=href if reason else urls.normalize(href), url_as_written=href, seed=seed, line=line, col=col,
        title=" ".join(str(title or "").split()) or None, section=" ".join(str(section or "").split()) or None,
        skip_reason=reason, tags=tag_list(tags), added=when(added),
    )


def parse_json(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pinboard's JSON export: a list of {href, description, extended, tags, time}."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        warn(f"{seed}: not JSON ({exc.msg} at line {exc.lineno}); no links read")
        return []
    if isinstance(items, dict):  # some exports wrap the list
        items = next((v for v in items.values() if isinstance(v, list)), [])
    if not isinstance(items, list):
        warn(f"{seed}: JSON holding no list of bookmarks; no links read")
        return []
    links = []
    for number, item in enumerate(items, 1):
        href = str(item.get(_first(item, _URL_COLUMNS)) or "").strip() if isinstance(item, dict) else ""
        if not href:
            warn(f"{seed}: item {number} has no URL; skipped")
            continue
        get = item.get
        links.append(_link(href, seed, number, 1, get(_first(item, _TITLE_COLUMNS)), get("folder") or get("collection"),
                           get(_first(item, _TAG_COLUMNS)), get(_first(item, _DATE_COLUMNS))))
    return links


def parse_csv(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pocket's (title,url,time_added,tags,status), Raindrop's (id,title,note,excerpt,url,folder,
    tags,created,...) and Instapaper's (URL,Title,Selection,Folder,Timestamp) CSV, or any CSV with
    a URL column; a line without a URL is reported."""
    reader = csv.DictReader(io.StringIO(text))
    columns = {name.strip().lower(): name for name in reader.fieldnames or []}
    url_column = next((columns[c] for c in _URL_COLUMNS if c in columns), None)
    if url_column is None:
        warn(f"{seed}: a CSV without a url column (it has: {', '.join(list(columns)[:10]) or 'nothing'}); no links read")
        return []
    pick = {kind: next((columns[c] for c in names if c in columns), None)
            for kind, names in (("title", _TITLE_COLUMNS), ("tags", _TAG_COLUMNS), ("added", _DATE_COLUMNS), ("section", _SECTION_COLUMNS))}
    links = []
    try:
        for row in reader:
            line = reader.line_num
            href = (row.get(url_column) or "").strip()
            if not href:
                warn(f"{seed}: line {line} has no URL; skipped")
                continue
            value = lambda kind: row.get(pick[kind]) if pick[kind] else None  # noqa: E731
            links.append(_link(href, seed, line, 1, value("title"), value("section"), value("tags"), value("added")))
    except csv.Error as exc:
        warn(f"{seed}: line {reader.line_num}: {exc}; the rest is not read")
    return links


def parse_feed(text: str, seed: str, warn: Warn) -> list[Link]:
    """RSS and Atom entries (link, title, categories as tags, date; the feed's title as section)
    and OPML outlines (a feed's site, else the feed; folders as sections)."""
    import lxml.etree

    try:
        root = lxml.etree.fromstring(text.encode("utf-8"), parser=lxml.etree.XMLParser(resolve_entities=False, no_network=True, recover=True))
    except lxml.etree.XMLSyntaxError as exc:
        warn(f"{seed}: not a feed ({exc}); no links read")
        return []
    if root is None:
        warn(f"{seed}: not a feed; no links read")
        return []
    links = list(_outlines(root, seed) if _local(root.tag) == "opml" else _entries(root, seed, warn))
    return links


def _entries(root, seed: str, warn: Warn) -> Iterator[Link]:
    channel = next((e for e in root.iter() if _local(e.tag) in ("channel", "feed")), root)
    section = _child_text(channel, "title")
    for entry in root.iter():
        if _local(entry.tag) not in ("item", "entry"):
            continue
        href = _child_text(entry, "link") or next(
            (e.get("href") for e in entry if _local(e.tag) == "link" and e.get("rel", "alternate") == "alternate" and e.get("href")), None)
        if not href:
            warn(f"{seed}: line {entry.sourceline}: an entry without a link; skipped")
            continue
        tags = [e.get("term") or (e.text or "") for e in entry if _local(e.tag) in ("category", "subject")]
        added = next((_child_text(entry, name) for name in ("pubDate", "published", "updated", "date") if _child_text(entry, name)), None)
        yield _link(href.strip(), seed, entry.sourceline or 0, 1, _child_text(entry, "title"), section, tags, added)


def _outlines(root, seed: str) -> Iterator[Link]:
    for outline in root.iter():
        if _local(outline.tag) != "outline":
            continue
        href = outline.get("htmlUrl") or outline.get("xmlUrl") or outline.get("url")
        if not href:
            continue  # a folder
        parent = outline.getparent()
        folder = parent.get("text") or parent.get("title") if parent is not None and _local(parent.tag) == "outline" else None
        yield _link(href.strip(), seed, outline.sourceline or 0, 1, outline.get("text") or outline.get("title"), folder, outline.get("category"), None)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child_text(element, name: str) -> str | None:
    for child in element:
        if _local(child.tag) == name and (child.text or "").strip():
            return " ".join(child.text.split())
    return None


def _first(item: dict, names: tuple[str, ...]) -> str:
    lowered = {str(k).lower(): k for k in item}
    return next((lowered[n] for n in names if n in lowered), names[0])
