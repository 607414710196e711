"""Exports of the bookmark services people leave, read as reading lists: Pinboard's JSON, Pocket's,
Raindrop's and Instapaper's CSV (Pocket's HTML is a bookmark file: `html`), and RSS, Atom and OPML
files (each entry a link). One reader a format: `json`, `csv`, lxml for XML. Titles, tags and
dates are kept with the link; folders, feeds and collections are sections. A row without a URL
is reported with its line, never a traceback."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from typing import Any, NamedTuple

from .. import urls
from .._types import Link
from .._util.text import decode_entities
from .links import _link

__all__ = ["ExportRow", "as_links", "feed_kind", "parse_csv", "parse_feed", "parse_json", "skip_comments", "source_lines", "tag_list", "when"]

_XML_DECLARATION = re.compile(r"\s*<\?xml[^>]*>", re.I)
_FEED_ROOT = re.compile(r"<(rss|feed|opml|rdf:RDF)\b", re.I)
_SPACE = re.compile(r"\s*")
TAG_ELEMENTS = frozenset(("category", "subject"))
DATE_ELEMENTS = ("pubDate", "published", "updated", "date")  # the first an entry has is its date
READ_ELEMENTS = frozenset(("link", "title", *TAG_ELEMENTS, *DATE_ELEMENTS))  # an entry's children that are read
LINE_MOST = 65_535  # libxml2 keeps an element's line up to this (past it: HTML's is 65,535, XML's its text's)
_URL_COLUMNS = ("url", "href", "link", "uri")
_TITLE_COLUMNS = ("title", "description", "name")
_TAG_COLUMNS = ("tags", "tag", "labels")
_DATE_COLUMNS = ("time_added", "created", "timestamp", "time", "date", "added", "created_at")
_SECTION_COLUMNS = ("folder", "collection", "status", "list")
Warn = Callable[[str], None]
Element = Any  # an lxml element (lxml has no type information)
_UNIX = re.compile(r"(\d{9,11})(\.\d+)?")  # (int() reads any digits: the result is written in ASCII)
# "Tue, 05 Mar 2024 08:00:00 GMT", what feeds write; a valid clock, or the slow path decides
_DAY_PATTERN = r"(?:[A-Za-z]{3}, )?(\d{1,2}) ([A-Za-z]{3}) (\d{4})"
_CLOCK_PATTERN = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
_RFC822 = re.compile(rf"{_DAY_PATTERN} ({_CLOCK_PATTERN}) ([A-Za-z]+|[+-]\d{{4}})", re.ASCII)
_RFC822_DAY, _CLOCK = re.compile(_DAY_PATTERN, re.ASCII), re.compile(_CLOCK_PATTERN, re.ASCII)
_MONTHS = {name: number for number, name in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_TWO = tuple(f"{n:02d}" for n in range(60))


def when(value: object) -> str | None:
    """A saved-at time as ISO: Unix seconds (Pocket, Instapaper), ISO (Pinboard, Raindrop) or RFC 822 (RSS)."""
    text = value.strip() if value.__class__ is str else str(value or "").strip()
    return _when(text) if text else None


def _when(text: str) -> str | None:
    # the two shapes of 100,000-line exports are written from their parts: a day's date is
    # worked out once (`_day`), a clock from ready two-digit strings (datetime, strftime and
    # even an f-string's `:02d` cost as much as the rest of a link). First, without a regex,
    # whole Unix seconds (isdecimal() is `\d+`), and a GMT date whose day was read before.
    if text.isdecimal() and 9 <= len(text) <= 11:
        days, seconds = divmod(int(text), 86400)
        day = _day_of_epoch(days)
        return f"{day}T{_TWO[seconds // 3600]}:{_TWO[seconds // 60 % 60]}:{_TWO[seconds % 60]}+00:00" if day else None
    end = len(text) - 4
    if end > 18 and text[end:] == " GMT" and text[end - 9] == " " and (day := _rfc822_day(text[: end - 9])) and _CLOCK.fullmatch(text, end - 8, end):
        return f"{day}T{text[end - 8 : end]}+00:00"  # (what `_RFC822` reads of it: the prefix, the clock, the zone)
    if unix := _UNIX.fullmatch(text):
        days, seconds = divmod(int(unix[1]), 86400)
        day = _day_of_epoch(days)
        return f"{day}T{_TWO[seconds // 3600]}:{_TWO[seconds // 60 % 60]}:{_TWO[seconds % 60]}+00:00" if day else None
    if rfc := _RFC822.fullmatch(text):
        number, month, year, clock, zone = rfc.groups()
        if zone.upper() in ("GMT", "UT", "UTC", "Z", "+0000") and (day := _day(int(year), _MONTHS.get(month.title(), 0), int(number))):
            return f"{day}T{clock}+00:00"
    return _parsed_when(text)


@functools.lru_cache(maxsize=4096)  # exports repeat their dates (a feed's day, an import's second)
def _parsed_when(text: str) -> str | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat(timespec="seconds")
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(text).isoformat(timespec="seconds")
    except (TypeError, ValueError, IndexError):
        return None


@functools.lru_cache(maxsize=4096)  # a feed's entries share a few hundred days
def _rfc822_day(prefix: str) -> str | None:
    """The day of an RFC 822 date's part before its clock ("Tue, 05 Mar 2024"), as `_RFC822` reads it."""
    if match := _RFC822_DAY.fullmatch(prefix):
        number, month, year = match.groups()
        return _day(int(year), _MONTHS.get(month.title(), 0), int(number))
    return None


@functools.lru_cache(maxsize=4096)
def _day(year: int, month: int, number: int) -> str | None:
    """'2024-03-05', or None for a day that is not in the calendar (the slow path decides)."""
    try:
        return date(year, month, number).isoformat()
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _day_of_epoch(days: int) -> str | None:
    try:
        return date.fromordinal(_EPOCH_DAY + days).isoformat()
    except (ValueError, OverflowError):
        return None


def tag_list(value: object) -> str | None:
    """Tags as one comma-separated string, whatever the service separated them with (a tuple:
    a feed's, strings already)."""
    if value.__class__ is tuple:
        return _tags(value)
    if isinstance(value, list):
        return _tags(tuple(str(v) for v in value))
    return _tags(str(value or "")) if value else None


@functools.lru_cache(maxsize=4096)  # a library has a few hundred sets of tags
def _tags(value: str | tuple[str, ...]) -> str | None:
    if isinstance(value, tuple):
        items = list(value)
    else:
        items = re.split(r"[,\s|]+", str(value or "")) if "," not in str(value or "") else str(value).split(",")
    items = [" ".join(t.split()) for t in items]
    return ", ".join(dict.fromkeys(t for t in items if t)) or None


class ExportRow(NamedTuple):
    """A link as an export writes it, before it is read as a Link (`as_links`). A JSON export's
    fields may hold anything: they are read as text there."""

    href: str
    line: int
    col: int
    title: object
    section: object  # its folder, collection or feed
    tags: object  # a string of them, a feed's tuple of them, a JSON export's list
    added: object  # when it was saved, as the export wrote it


def as_links(rows: Iterable[ExportRow], seed: str) -> list[Link]:
    """An export's rows as the links of `seed`, in order."""
    return [_link(fields[0], fields[1], seed, *fields[2:]) for fields in _fields_of(rows)]


# a Link's fields but its seed, in its order (`links._link`)
_LinkFields = tuple[str, str, int, int, str | None, str | None, str | None, tuple[str, ...], str | None, str | None]


def _fields_of(rows: Iterable[ExportRow]) -> list[_LinkFields]:
    """Each row's Link fields but its seed, in Link's order:
    url, url_as_written, line, col, title, section, skip_reason, candidates, tags, added."""
    fields: list[_LinkFields] = []
    sections: dict[str, str | None] = {}  # an export's few folders, each tidied once
    for href, line, col, title, section, tags, added in rows:
        url, reason = urls.normalize_plain(href), None  # nearly every link: one match
        if url is None:
            reason = urls.skip_reason(href)
            url = href if reason else urls.normalize(href)
        if section.__class__ is not str:  # (a JSON export's folder may be anything)
            section = str(section or "")
        if section not in sections:
            sections[section] = " ".join(section.split()) or None
        fields.append(
            (
                url,
                href,
                line,
                col,
                decode_entities(" ".join(str(title or "").split())) or None,
                sections[section],
                reason,
                (),
                tag_list(tags),
                when(added),
            )
        )
    return fields


def parse_json(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pinboard's JSON export: a list of {href, description, extended, tags, time}."""
    return as_links(_json_rows(text, seed, warn), seed)


def parse_csv(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pocket's (title,url,time_added,tags,status), Raindrop's (id,title,note,excerpt,url,folder,
    tags,created,...) and Instapaper's (URL,Title,Selection,Folder,Timestamp) CSV, or any CSV with
    a URL column; a line without a URL, or that cannot be read, is reported."""
    return as_links(_csv_rows(text, seed, warn), seed)


def _json_rows(text: str, seed: str, warn: Warn) -> list[ExportRow]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        warn(f"{seed}: not JSON ({exc.msg} at line {exc.lineno}); no links read")
        return []
    except (RecursionError, ValueError) as exc:  # nested past Python's depth; a number of 5,000 digits
        warn(f"{seed}: JSON that cannot be read ({type(exc).__name__}: {str(exc)[:100]}); no links read")
        return []
    if isinstance(items, dict):  # some exports wrap the list
        items = next((v for v in items.values() if isinstance(v, list)), [])
    if not isinstance(items, list):
        warn(f"{seed}: JSON holding no list of bookmarks; no links read")
        return []
    rows: list[ExportRow] = []
    for number, item in enumerate(items, 1):
        keys = _keys(tuple(item)) if isinstance(item, dict) else None
        href = str(item.get(keys[0]) or "").strip() if keys else ""
        if keys is None or not href:
            warn(f"{seed}: item {number} has no URL; skipped")
            continue
        get = item.get
        rows.append(ExportRow(href, number, 1, get(keys[1]), get("folder") or get("collection"), get(keys[2]), get(keys[3])))
    return rows


@functools.lru_cache(maxsize=256)  # an export's items share a few shapes
def _keys(item: tuple[str, ...]) -> tuple[str, str, str, str]:
    """The keys of an item's URL, title, tags and date, whatever their case."""
    return _first(item, _URL_COLUMNS), _first(item, _TITLE_COLUMNS), _first(item, _TAG_COLUMNS), _first(item, _DATE_COLUMNS)


def _csv_rows(text: str, seed: str, warn: Warn) -> list[ExportRow]:
    """The rows of a CSV, columns found by their header's names (the last of two alike, as
    `csv.DictReader` reads them). A field may be as long as the file (the csv module's own limit
    is 128 KiB, and process-wide: the caller's is put back); a line that cannot be read ends the
    reading there, reported (read on, a quoted field's lines would be taken for rows)."""
    limit = csv.field_size_limit(_FIELD_LIMIT)  # (whatever the caller set: put back after)
    try:
        return _csv_rows_read(csv.reader(io.StringIO(text)), seed, warn)
    finally:
        csv.field_size_limit(limit)


_FIELD_LIMIT = 2**31 - 1  # (the largest a C long takes everywhere)


def _csv_rows_read(reader: Any, seed: str, warn: Warn) -> list[ExportRow]:  # (csv's reader type is private)
    try:
        header = next(reader, None) or []
    except csv.Error as exc:
        warn(f"{seed}: line {reader.line_num}: {exc}; no links read")
        return []
    index = {name: number for number, name in enumerate(header)}
    columns = {name.strip().lower(): index[name] for name in header}
    url = next((columns[c] for c in _URL_COLUMNS if c in columns), None)
    if url is None:
        warn(f"{seed}: a CSV without a url column (it has: {', '.join(list(columns)[:10]) or 'nothing'}); no links read")
        return []
    title, tags, added, section = (
        next((columns[c] for c in names if c in columns), None) for names in (_TITLE_COLUMNS, _TAG_COLUMNS, _DATE_COLUMNS, _SECTION_COLUMNS)
    )
    rows: list[ExportRow] = []
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            warn(f"{seed}: line {reader.line_num}: {exc}; the rest is not read")
            break
        if not values:  # (a blank line, as DictReader skips it)
            continue
        width = len(values)
        href = values[url].strip() if url < width else ""
        if not href:
            warn(f"{seed}: line {reader.line_num} has no URL; skipped")
            continue
        rows.append(
            ExportRow(
                href,
                reader.line_num,
                1,
                values[title] if title is not None and title < width else None,
                values[section] if section is not None and section < width else None,
                values[tags] if tags is not None and tags < width else None,
                values[added] if added is not None and added < width else None,
            )
        )
    return rows


def parse_feed(text: str | bytes, seed: str, warn: Warn, base: str | None = None) -> list[Link]:
    """RSS and Atom entries (link, title, categories as tags, date; the feed's title as section)
    and OPML outlines (a feed's site, else the feed; folders as sections). Bytes (a fetched feed)
    are decoded as their XML declaration says; entry links are resolved against `base`."""
    # decoded text is parsed as what it is now, UTF-8, whatever its declaration says (a GBK file)
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    encoding = None if isinstance(text, bytes) else "utf-8"
    root, problem = _feed_root(data, encoding)
    if root is None:
        warn(f"{seed}: {problem}; no links read")
        return []
    opml = _local(root.tag) == "opml"
    elements = _outline_elements if opml else _feed_entries
    found = elements(root)
    lines = source_lines(found, data, lambda again: elements(_feed_root(again, encoding)[0]))
    rows = _outlines(found, lines, base) if opml else _entries(root, found, lines, seed, warn, base)
    return as_links(rows, seed)


def feed_kind(text: str) -> str | None:
    """The root element's name, lower case (`rss`, `feed`, `opml`, `rdf:rdf`), if `text` begins
    as a feed does (an XML declaration, white space and comments before it), else None."""
    declaration = _XML_DECLARATION.match(text)
    root = _FEED_ROOT.match(text, skip_comments(text, declaration.end() if declaration else 0))
    return root[1].lower() if root else None


def skip_comments(text: str, position: int = 0) -> int:
    """Where `text` goes on after the white space and comments from `position` (each read once)."""
    while True:
        position = space.end() if (space := _SPACE.match(text, position)) else position  # (`\s*` always matches)
        if not text.startswith("<!--", position) or (end := text.find("-->", position + 4)) == -1:
            return position
        position = end + 3


def source_lines(elements: list[Element], data: bytes, parse: Callable[[bytes], list[Element]]) -> list[int]:
    """Each element's line in `data`. libxml2 keeps a line up to LINE_MOST (past it an HTML
    element's is LINE_MOST, an XML one's the line of the text in it): past it, `data` is parsed
    again (`parse` gives the same elements of the new tree) with the line breaks before a window
    made spaces, once a window. White space either way: the same elements, in the same order."""
    lines = [element.sourceline or 0 for element in elements]
    late = [i for i, line in enumerate(lines) if line >= LINE_MOST]
    cut = joined = 0  # line breaks made spaces, up to `cut`
    while late:
        for _ in range(_WINDOW):
            cut = data.find(b"\n", cut + 1)
            if cut == -1:
                return lines  # (no more lines: what libxml2 said stands)
        joined += _WINDOW
        again = parse(data[: cut + 1].replace(b"\n", b" ") + data[cut + 1 :])
        if len(again) != len(elements):
            return lines
        still = []
        for i in late:
            if (line := again[i].sourceline or 0) < LINE_MOST:
                lines[i] = line + joined
            else:
                still.append(i)
        late = still
    return lines


_WINDOW = LINE_MOST - 1_000  # line breaks a window moves on (it begins a little before the last one ended)


def _feed_root(data: bytes, encoding: str | None) -> tuple[Element | None, str | None]:
    """The feed's root element, or None and why."""
    import lxml.etree

    parser = lxml.etree.XMLParser(resolve_entities=False, no_network=True, recover=True, encoding=encoding)
    try:
        root = lxml.etree.fromstring(data, parser=parser)
    except lxml.etree.XMLSyntaxError as exc:
        return None, f"not a feed ({exc})"
    return root, None if root is not None else "not a feed"


def _feed_entries(root: Element | None) -> list[Element]:
    return [] if root is None else list(root.iter("{*}item", "{*}entry", "item", "entry"))


def _outline_elements(root: Element | None) -> list[Element]:
    return [] if root is None else [e for e in root.iter() if _local(e.tag) == "outline"]


def _section_of(root: Element) -> str | None:
    """The feed's title."""
    return _child_text(next(root.iter("{*}channel", "{*}feed", "channel", "feed"), root), "title")


def _entries(root: Element, entries: list[Element], lines: list[int], seed: str, warn: Warn, base: str | None) -> Iterator[ExportRow]:
    """The rows of the feed's `entries` (on their `lines`)."""
    section = _section_of(root)
    tag_elements, read = TAG_ELEMENTS, READ_ELEMENTS
    for number, (entry, line) in enumerate(zip(entries, lines, strict=True), 1):  # the column: a feed written on one line has one line
        texts: dict[str, str] = {}  # each child's first non-empty text, by local name: one pass
        href: str | None = None
        tags: list[str] = []
        for child in entry:
            name = child.tag
            if name.__class__ is not str:  # (a comment's or instruction's tag is a function)
                continue
            if "}" in name:
                name = name.rpartition("}")[2]
            if name not in read:  # (a description is not read: it may hold the whole article)
                continue
            text = child.text  # (lxml makes a new string at each reading)
            if name in tag_elements:
                tags.append(child.get("term") or text or "")
            elif name == "link" and href is None and (written := child.get("href")) and child.get("rel", "alternate") == "alternate":
                href = written
            if text and name not in texts and not text.isspace():
                texts[name] = text
        href = texts.get("link") or href
        if not href:
            warn(f"{seed}: line {line}: an entry without a link; skipped")
            continue
        added = next((texts[name] for name in DATE_ELEMENTS if name in texts), None)
        href = href.strip()
        yield ExportRow(_joined(base, href) if base else href, line, number, texts.get("title"), section, tuple(tags), added)


def _outlines(outlines: list[Element], lines: list[int], base: str | None) -> Iterator[ExportRow]:
    for number, (outline, line) in enumerate(zip(outlines, lines, strict=True), 1):
        href = outline.get("htmlUrl") or outline.get("xmlUrl") or outline.get("url")
        if not href:
            continue  # a folder
        parent = outline.getparent()
        folder = parent.get("text") or parent.get("title") if parent is not None and _local(parent.tag) == "outline" else None
        yield ExportRow(_joined(base, href.strip()), line, number, outline.get("text") or outline.get("title"), folder, outline.get("category"), None)


def _joined(base: str | None, href: str) -> str:
    """`href` resolved against the feed's own URL (a fetched feed's `/posts/1`), as written otherwise."""
    if not base:
        return href
    from urllib.parse import urljoin

    try:
        return urljoin(base, href)
    except ValueError:
        return href


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child_text(element: Element, name: str) -> str | None:
    for child in element:
        if _local(child.tag) == name and (child.text or "").strip():
            return " ".join(child.text.split())
    return None


def _first(item: Iterable[str], names: tuple[str, ...]) -> str:
    lowered = {k.lower(): k for k in item}
    return next((lowered[n] for n in names if n in lowered), names[0])
