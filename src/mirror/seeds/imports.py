"""Exports of the bookmark services people leave, read as reading lists: Pinboard's JSON, Pocket's,
Raindrop's and Instapaper's CSV (Pocket's HTML is a bookmark file: `html`), and RSS, Atom and OPML
files (each entry a link). Titles, tags and dates are kept with the link; folders, feeds and
collections are sections. A row without a URL is reported with its line, never a traceback."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import date, datetime
from itertools import islice

from .._types import Link
from . import urls
from ._child_call import ChildCall
from ._feed_text import DATE_ELEMENTS, READ_ELEMENTS, TAG_ELEMENTS, feed_rows, first_entry_name
from .links import _link

__all__ = ["feed_kind", "parse_csv", "parse_feed", "parse_json", "skip_comments", "tag_list", "when"]

_XML_DECLARATION = re.compile(r"\s*<\?xml[^>]*>", re.I)
_FEED_ROOT = re.compile(r"<(rss|feed|opml|rdf:RDF)\b", re.I)
_SPACE = re.compile(r"\s*")
_URL_COLUMNS = ("url", "href", "link", "uri")
_TITLE_COLUMNS = ("title", "description", "name")
_TAG_COLUMNS = ("tags", "tag", "labels")
_DATE_COLUMNS = ("time_added", "created", "timestamp", "time", "date", "added", "created_at")
_SECTION_COLUMNS = ("folder", "collection", "status", "list")
Warn = Callable[[str], None]
_UNIX = re.compile(r"(\d{9,11})(\.\d+)?")  # (int() reads any digits: the result is written in ASCII)
# "Tue, 05 Mar 2024 08:00:00 GMT", what feeds write; a valid clock, or the slow path decides
_RFC822_DAY = r"(?:[A-Za-z]{3}, )?(\d{1,2}) ([A-Za-z]{3}) (\d{4})"
_CLOCK = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
_RFC822 = re.compile(rf"{_RFC822_DAY} ({_CLOCK}) ([A-Za-z]+|[+-]\d{{4}})", re.ASCII)
_RFC822_DAY, _CLOCK = re.compile(_RFC822_DAY, re.ASCII), re.compile(_CLOCK, re.ASCII)
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


Row = tuple  # (href, line, col, title, section, tags, added): a link as an export writes it
TWO_CORES = 50_000  # rows from which the second half is made into links in a child process meanwhile


def parents_share(rows: int) -> int:
    """How many of a long export's rows the parent makes links of: a little more than half,
    as the child starts a Python first."""
    return rows * 11 // 20


def links_of(rows: Iterable[Row], seed: str, child: ChildCall | None = None, count: int | None = None) -> list[Link]:
    """Rows as links, in order; a long export's first part made in a child process meanwhile
    (`_child_call`: the second core), by the same function, so the result is the same. `child`:
    one started (`waiting_child`) while this process parsed the document; it is given its rows
    as soon as they are read, `count` (as many rows, about) telling how many to give it."""
    count = len(rows) if count is None else count
    rows = iter(rows)
    if count < TWO_CORES:
        return as_links(_fields_of(list(rows)), seed)
    theirs = list(islice(rows, count - parents_share(count)))
    with nullcontext(child) if child is not None else ChildCall("mirror.seeds.imports", "_fields_of", theirs) as child:
        child.send(theirs)  # (a child given its rows when started, or that reads them itself, takes none here)
        links = as_links(_fields_of(list(rows)), seed)
        answer = child.result()
    return as_links(answer if _same_rows(answer, theirs) else _fields_of(theirs), seed) + links


def _same_rows(answer: object, rows: list[Row]) -> bool:
    """Whether a child's answer is the fields of exactly these rows, each URL as written on its
    line (a child that read the export otherwise, its rows shifted, is not taken at its word)."""
    return isinstance(answer, list) and len(answer) == len(rows) and all(
        fields[1] == row[0] and fields[2] == row[1] for fields, row in zip(answer, rows, strict=True))


def waiting_child(long: bool) -> ChildCall | nullcontext:
    """For a document estimated `long`, a child process to start before this one parses it
    (its Python starts meanwhile), to be given its rows by `links_of`; else nothing."""
    return ChildCall.waiting("mirror.seeds.imports", "_fields_of") if long else nullcontext()


def as_links(fields: list[tuple], seed: str) -> list[Link]:
    """`_fields_of`'s tuples (made here or in a child process) as the links of `seed`."""
    return [_link(url, written, seed, *rest) for url, written, *rest in fields]


def _fields_of(rows: list[Row]) -> list[tuple]:
    """(Also in the child process.) Each row's Link fields but its seed, in Link's order:
    url, url_as_written, line, col, title, section, skip_reason, candidates, tags, added."""
    fields = []
    sections: dict = {}  # an export's few folders, each tidied once
    for href, line, col, title, section, tags, added in rows:
        url, reason = urls.normalize_plain(href), None  # nearly every link: one match
        if url is None:
            reason = urls.skip_reason(href)
            url = href if reason else urls.normalize(href)
        if section.__class__ is not str:  # (a JSON export's folder may be anything)
            section = str(section or "")
        if section not in sections:
            sections[section] = " ".join(section.split()) or None
        fields.append((url, href, line, col, " ".join(str(title or "").split()) or None, sections[section], reason, (), tag_list(tags), when(added)))
    return fields


def parse_json(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pinboard's JSON export: a list of {href, description, extended, tags, time}."""
    return _on_two_cores("json", text, seed, warn)


def parse_csv(text: str, seed: str, warn: Warn) -> list[Link]:
    """Pocket's (title,url,time_added,tags,status), Raindrop's (id,title,note,excerpt,url,folder,
    tags,created,...) and Instapaper's (URL,Title,Selection,Folder,Timestamp) CSV, or any CSV with
    a URL column; a line without a URL, or that cannot be read, is reported."""
    return _on_two_cores("csv", text, seed, warn)


def _on_two_cores(kind: str, text: str, seed: str, warn: Warn) -> list[Link]:
    """An export's links. A long one's child process starts at once and reads the export too (the
    C parsers take a fraction of the time), then makes links of the rows of its share (`links_of`):
    started after the parse, as a reading list's rows would be, it waited for it."""
    long = text.count(_ROW_MARK[kind]) >= TWO_CORES  # (an estimate, before any parse: whether to start the child)
    with ChildCall("mirror.seeds.imports", "_export_fields_for_parent", kind, text) if long else nullcontext() as child:
        return links_of(_ROWS_OF[kind](text, seed, warn), seed, child)


def _export_fields_for_parent(kind: str, text: str) -> list[tuple]:
    """(In the child process.) The Link fields of the export's rows of the child's share (`links_of`)."""
    rows = _ROWS_OF[kind](text, "", lambda warning: None)
    return _fields_of(rows[: len(rows) - parents_share(len(rows))])


def _json_rows(text: str, seed: str, warn: Warn) -> list[Row]:
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
    rows: list[Row] = []
    for number, item in enumerate(items, 1):
        keys = _keys(tuple(item)) if isinstance(item, dict) else None
        href = str(item.get(keys[0]) or "").strip() if keys else ""
        if not href:
            warn(f"{seed}: item {number} has no URL; skipped")
            continue
        get = item.get
        rows.append((href, number, 1, get(keys[1]), get("folder") or get("collection"), get(keys[2]), get(keys[3])))
    return rows


@functools.lru_cache(maxsize=256)  # an export's items share a few shapes
def _keys(item: tuple) -> tuple[str, str, str, str]:
    """The keys of an item's URL, title, tags and date, whatever their case."""
    return tuple(_first(item, names) for names in (_URL_COLUMNS, _TITLE_COLUMNS, _TAG_COLUMNS, _DATE_COLUMNS))


def _csv_rows(text: str, seed: str, warn: Warn) -> list[Row]:
    """The rows of a CSV, columns found by their header's names (the last of two alike, as
    `csv.DictReader` reads them). A field may be as long as the file (the csv module's own limit
    is 128 KiB, and process-wide: the caller's is put back); a line that cannot be read ends the
    reading there, reported (read on, a quoted field's lines would be taken for rows)."""
    limit = csv.field_size_limit(_FIELD_LIMIT)  # (the same in the child process, whatever the caller set)
    try:
        return _csv_rows_read(csv.reader(io.StringIO(text)), seed, warn)
    finally:
        csv.field_size_limit(limit)


_FIELD_LIMIT = 2**31 - 1  # (the largest a C long takes everywhere)


def _csv_rows_read(reader, seed: str, warn: Warn) -> list[Row]:
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
    title, tags, added, section = (next((columns[c] for c in names if c in columns), None)
                                   for names in (_TITLE_COLUMNS, _TAG_COLUMNS, _DATE_COLUMNS, _SECTION_COLUMNS))
    rows: list[Row] = []
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
        rows.append((href, reader.line_num, 1, values[title] if title is not None and title < width else None,
                     values[section] if section is not None and section < width else None,
                     values[tags] if tags is not None and tags < width else None,
                     values[added] if added is not None and added < width else None))
    return rows


_ROWS_OF = {"csv": _csv_rows, "json": _json_rows}
_ROW_MARK = {"csv": "\n", "json": "{"}  # what each row of a long export holds once at least


def parse_feed(text: str | bytes, seed: str, warn: Warn, base: str | None = None) -> list[Link]:
    """RSS and Atom entries (link, title, categories as tags, date; the feed's title as section)
    and OPML outlines (a feed's site, else the feed; folders as sections). Bytes (a fetched feed)
    are decoded as their XML declaration says; entry links are resolved against `base`.
    A long feed's child process reads its first part from the text (`_feed_split`), or, for one
    read from the tree, starts before this one parses it (`waiting_child`)."""
    # decoded text is parsed as what it is now, UTF-8, whatever its declaration says (a GBK file)
    encoding = None if isinstance(text, bytes) else "utf-8"
    # (an estimate, before any parse: whether to start the child; what it does is decided on the parse)
    long = _counted_past(text, _ENTRY_MARKS[encoding], TWO_CORES)
    # a text that reads one way only is read as libxml2 parses it (in a thread: it lets go of the
    # GIL), its entries without the tree where they have a plain shape (`_feed_text`); a long
    # one's first part in a child process meanwhile, from the text too (`_feed_split`)
    plain = encoding is not None and "\r" not in text and "<!DOCTYPE" not in text and not _is_opml(text)
    split = _feed_split(text) if plain and long else None
    with ChildCall("mirror.seeds.imports", "_feed_fields_for_parent", text[:split], seed, base) if split else waiting_child(long) as child:
        if plain:
            with ThreadPoolExecutor(1, thread_name_prefix="mirror-feed") as thread:
                parsed = thread.submit(_feed_root, text, encoding)
                read = feed_rows(text, seed, _joiner(base), split or 0)
                if split and read is not None:  # (made while libxml2 parses, in vain if it mends the feed)
                    ours = _part_fields(read.rows)
                root, well_formed, problem = parsed.result()
        else:
            read, (root, well_formed, problem) = None, _feed_root(text, encoding)
        if root is None:
            warn(f"{seed}: {problem}; no links read")
            return []
        if _local(root.tag) == "opml":
            return links_of(list(_outlines(root, base)), seed, child)
        if read is not None and well_formed:  # (what libxml2 mended, the tree has as it mended it)
            section = _section_of(root)
            if split:
                theirs = child.result() or _feed_fields_for_parent(text[:split], seed, base)
                if theirs is not None:  # (else the first part is not read from the text, nor is the whole)
                    fields, warnings, before = theirs
                    for warning in (*warnings, *read.warnings):
                        warn(warning)
                    return _links_placed(fields, seed, section) + _links_placed(ours, seed, section, before)
            else:
                for warning in read.warnings:
                    warn(warning)
                return links_of([(*row[:4], section, *row[4:]) for row in read.rows], seed, child)
        entries = _feed_entries(root)
        return links_of(_entries(root, entries, seed, warn, base), seed, None if split else child, len(entries))


def _feed_split(text: str) -> int | None:
    """Where a long feed's first part, the child's, ends: after the end tag of the entry that
    ends about its share from the start (the child tells whether it is one). None if none shows."""
    name = first_entry_name(text)
    closing = text.find(f"</{name}", len(text) - parents_share(len(text))) if name else -1
    end = text.find(">", closing)
    return end + 1 if closing != -1 and end != -1 and not text[closing + len(name) + 2 : end].strip(" \t\n") else None


def _feed_fields_for_parent(text: str, seed: str, base: str | None) -> tuple[list[tuple], list[str], int] | None:
    """(In the child process.) The Link fields (without the feed's title as section) and warnings
    of the entries of a feed's first part, and how many there are; None unless they are all read
    from the text and the last ends where the part does."""
    read = feed_rows(text, seed, _joiner(base))
    if read is None or read.end != len(text) or not read.entries:
        return None
    return _part_fields(read.rows), read.warnings, read.entries


def _part_fields(rows: list[tuple]) -> list[tuple]:
    """The Link fields of a feed part's rows (`feed_rows`'), their section left to `_links_placed`."""
    return _fields_of([(*row[:4], None, *row[4:]) for row in rows])


def _links_placed(fields: list[tuple], seed: str, section: str | None, before: int = 0) -> list[Link]:
    """`as_links` of a feed's part read apart: the feed's title as section, each entry numbered
    after the `before` ones of the parts before it."""
    return [_link(url, written, seed, line, number + before, title, section, reason, candidates, tags, added)
            for url, written, line, number, title, _, reason, candidates, tags, added in fields]


_ENTRY_MARKS = {None: (b"<item", b"<entry", b":item", b":entry", b"<outline"), "utf-8": ("<item", "<entry", ":item", ":entry", "<outline")}


def _counted_past(text: str | bytes, marks: tuple, most: int) -> bool:
    """Whether the marks occur `most` times in all (counted until they do)."""
    count = 0
    for mark in marks:
        count += text.count(mark)
        if count >= most:
            return True
    return False


def _is_opml(text: str) -> bool:
    return feed_kind(text) == "opml"


def feed_kind(text: str) -> str | None:
    """The root element's name, lower case (`rss`, `feed`, `opml`, `rdf:rdf`), if `text` begins
    as a feed does (an XML declaration, white space and comments before it), else None."""
    declaration = _XML_DECLARATION.match(text)
    root = _FEED_ROOT.match(text, skip_comments(text, declaration.end() if declaration else 0))
    return root[1].lower() if root else None


def skip_comments(text: str, position: int = 0) -> int:
    """Where `text` goes on after the white space and comments from `position` (each read once)."""
    while True:
        position = _SPACE.match(text, position).end()
        if not text.startswith("<!--", position) or (end := text.find("-->", position + 4)) == -1:
            return position
        position = end + 3


def _feed_root(text: str | bytes, encoding: str | None) -> tuple[object, bool, str | None]:
    """The feed's root element (or None, and why), and whether libxml2 found nothing to mend in it."""
    import lxml.etree

    data = text.encode("utf-8") if encoding else text
    parser = lxml.etree.XMLParser(resolve_entities=False, no_network=True, recover=True, encoding=encoding)
    try:
        root = lxml.etree.fromstring(data, parser=parser)
    except lxml.etree.XMLSyntaxError as exc:
        return None, False, f"not a feed ({exc})"
    return root, len(parser.error_log) == 0, "not a feed"


def _feed_entries(root) -> list:
    return list(root.iter("{*}item", "{*}entry", "item", "entry"))


def _section_of(root) -> str | None:
    """The feed's title."""
    return _child_text(next(root.iter("{*}channel", "{*}feed", "channel", "feed"), root), "title")


def _entries(root, entries: list, seed: str, warn: Warn, base: str | None) -> Iterator[Row]:
    """The rows of the feed's `entries`."""
    section = _section_of(root)
    tag_elements, read = TAG_ELEMENTS, READ_ELEMENTS
    for number, entry in enumerate(entries, 1):  # the column: a feed written on one line has one line
        texts: dict[str, str] = {}  # each child's first non-empty text, by local name: one pass
        href, tags = None, []
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
            warn(f"{seed}: line {entry.sourceline}: an entry without a link; skipped")
            continue
        added = next((texts[name] for name in DATE_ELEMENTS if name in texts), None)
        href = href.strip()
        yield _joined(base, href) if base else href, entry.sourceline or 0, number, texts.get("title"), section, tuple(tags), added


def _outlines(root, base: str | None) -> Iterator[Row]:
    outlines = (e for e in root.iter() if _local(e.tag) == "outline")
    for number, outline in enumerate(outlines, 1):
        href = outline.get("htmlUrl") or outline.get("xmlUrl") or outline.get("url")
        if not href:
            continue  # a folder
        parent = outline.getparent()
        folder = parent.get("text") or parent.get("title") if parent is not None and _local(parent.tag) == "outline" else None
        yield _joined(base, href.strip()), outline.sourceline or 0, number, outline.get("text") or outline.get("title"), folder, outline.get("category"), None


def _joiner(base: str | None) -> Callable[[str], str] | None:
    """`_joined` against `base`, for `feed_rows` (None: links as written)."""
    return (lambda href: _joined(base, href)) if base else None


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


def _child_text(element, name: str) -> str | None:
    for child in element:
        if _local(child.tag) == name and (child.text or "").strip():
            return " ".join(child.text.split())
    return None


def _first(item: dict, names: tuple[str, ...]) -> str:
    lowered = {str(k).lower(): k for k in item}
    return next((lowered[n] for n in names if n in lowered), names[0])
