"""A feed's entries read from its text with one regular expression each, instead of an lxml
element (a Python object) for each of their children; taken only if libxml2, parsing it
meanwhile, found the feed well-formed.

Well-formed XML without a DTD reads one way only: its five entities and character references,
CDATA as written, each element closed by its own name. So an entry whose children hold only
text (an export's: title, link, date, categories), in a shape met before, is read here as
`imports._entries` reads it from the tree; a feed with an entry of another kind (a child that
holds elements, a comment between them) is left to the tree. One difference, deliberate: past
line 65,535 libxml2 guesses an element's line from the text in it; read here, an entry keeps its
own. tests/test_seeds_feed_text.py checks the two against each other on random feeds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["DATE_ELEMENTS", "READ_ELEMENTS", "TAG_ELEMENTS", "FeedRows", "feed_rows", "first_entry_name"]

TAG_ELEMENTS = frozenset(("category", "subject"))
DATE_ELEMENTS = ("pubDate", "published", "updated", "date")  # the first an entry has is its date
READ_ELEMENTS = frozenset(("link", "title", *TAG_ELEMENTS, *DATE_ELEMENTS))  # an entry's children that are read
_MARKUPS = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"))
# (a feed's entries have a few shapes, of a few children: with and without a category, two, ...;
# each shape's expression is made once, at a cost a child, so their children are counted)
_SHAPE_CHILDREN_MOST = 256

# (possessive repeats wherever a token's end is plain: a hostile feed makes no regex go back and forth)
_NAME = r"[^ \t\n\r<>/=!?\"']++"  # (XML's white space is these four)
_SPACE = r"[ \t\n\r]*+"
_ATTRIBUTES = rf"(?:[ \t\n\r]++{_NAME}{_SPACE}={_SPACE}(?:\"[^\"]*+\"|'[^']*+'))*+{_SPACE}"
_ONE_LINE_ATTRIBUTES = rf"(?:[ \t]++{_NAME}[ \t]*+=[ \t]*+(?:\"[^\"\n]*+\"|'[^'\n]*+'))*+[ \t]*+"  # (an entry's start tag: its line is the entry's)
_MARKUP = r"!--.*?-->|\?.*?\?>|!\[CDATA\[.*?\]\]>"  # (after a "<": one alternation, searched for a "<" at a time)
_CONTENT = r"(?:[^<]++|<!\[CDATA\[.*?\]\]>)*+"  # a child's: text only
_START = re.compile(r"<(?:[^ \t\n\r<>/=!?\"':]++:)?(?:item|entry)(?=[ \t\n\r/>])")
_ENTRY = re.compile(
    rf"<({_NAME}){_ATTRIBUTES}>((?:[^<]++|<(?:{_MARKUP}|(?P<child>{_NAME}){_ATTRIBUTES}(?:/>|>{_CONTENT}</(?P=child){_SPACE}>)))*+)</\1{_SPACE}>",
    re.S,
)
_CHILD = re.compile(rf"<(?:({_MARKUP})|({_NAME})({_ATTRIBUTES})(?:/>|>{_CONTENT}</\2{_SPACE}>))", re.S)
_ATTRIBUTE = re.compile(rf"({_NAME}){_SPACE}={_SPACE}(?:\"([^\"]*+)\"|'([^']*+)')")
_REFERENCE = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#([0-9]+)|#x([0-9a-fA-F]+));")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_WHITESPACE = str.maketrans("\t\n\r", "   ")  # (an attribute's, as XML normalizes it)


def feed_rows(text: str, seed: str, joined: Callable[[str], str] | None, start: int = 0) -> FeedRows | None:
    """The rows (but their section) and warnings `imports._entries` makes of the entries of a feed's
    `text`, if it is well-formed (libxml2 tells), without a DTD nor a carriage return; None if one
    of them is not in a shape read here (children that hold only text, with white space between
    them), or may be in a comment. From `start` (where an entry ended): the entries after it,
    numbered from 1."""
    rows: list[tuple] = []
    warnings: list[str] = []
    shapes: dict[tuple, _Shape] = {}
    shape = None
    position = counted = start
    number, line = 0, 1 + text.count("\n", 0, start)
    while True:
        # the next entry: where the last one ended, past white space (nearly always), else searched for
        match = shape.pattern.match(text, position) if shape is not None else None
        if match is not None:
            at = match.end(1)
        else:
            if (found := _START.search(text, position)) is None:
                break
            at = found.start()
            if _inside_markup(text, position, at):
                return None
            shape = _shape_at(text, at, shapes)
            match = shape.pattern.match(text, at) if shape is not None else None
            if match is None:
                return None
        number += 1
        position = match.end()
        line += text.count("\n", counted, at)
        counted = at
        href, title, tags, added = shape.fields(match.groups(""))
        if not href:
            warnings.append(f"{seed}: line {line}: an entry without a link; skipped")
            continue
        rows.append((joined(href.strip()) if joined else href.strip(), line, number, title, tags, added))
    return FeedRows(rows, warnings, number, position)


class FeedRows(NamedTuple):
    rows: list[tuple]  # (link, line, number, title, tags, date): a row but its section
    warnings: list[str]
    entries: int  # those without a link too
    end: int  # where the last one ended


class _Shape:
    """One sequence of an entry's children, as a regular expression, and where its fields are."""

    def __init__(self, entry: str, children: tuple[tuple[str, bool], ...]) -> None:
        parts, groups = [rf"({_SPACE})<{re.escape(entry)}{_ONE_LINE_ATTRIBUTES}>"], 1  # (the space before it: groups()[0])
        titles: list[int] = []
        links: list[tuple[int | None, int]] = []  # (its attributes' group, if it has some, its text's)
        dates: dict[str, list[int]] = {name: [] for name in DATE_ELEMENTS}
        tags: list[tuple[int | None, int]] = []
        for name, attributes in children:
            local, tag = name.rpartition(":")[2], re.escape(name)
            if local in ("link", *TAG_ELEMENTS):  # (their attributes count: href, rel, term)
                if attributes:
                    parts.append(rf"{_SPACE}<{tag}({_ATTRIBUTES})(?:/>|>([^<]*+)</{tag}{_SPACE}>)")
                    groups += 2
                else:
                    parts.append(rf"{_SPACE}<{tag}{_SPACE}(?:/>|>([^<]*+)</{tag}{_SPACE}>)")
                    groups += 1
                (links if local == "link" else tags).append((groups - 2 if attributes else None, groups - 1))  # (indices in groups())
            elif local == "title" or local in dates:
                parts.append(rf"{_SPACE}<{tag}{_ATTRIBUTES}(?:/>|>([^<]*+)</{tag}{_SPACE}>)")
                groups += 1
                (titles if local == "title" else dates[local]).append(groups - 1)
            else:  # not read: any text, CDATA too
                parts.append(rf"{_SPACE}<{tag}{_ATTRIBUTES}(?:/>|>{_CONTENT}</{tag}{_SPACE}>)")
        parts.append(rf"{_SPACE}</{re.escape(entry)}{_SPACE}>")
        self.pattern = re.compile("".join(parts), re.S)
        self.titles, self.tags = tuple(titles), tuple(tags)
        self.dates = tuple(group for name in DATE_ELEMENTS for group in dates[name])
        self.link_texts = tuple(text for _, text in links)
        self.link_attributes = tuple(attributes for attributes, _ in links if attributes is not None)
        if len(links) == 1 and not self.link_attributes and len(self.titles) <= 1 and len(self.dates) <= 1 and all(a is None for a, _ in tags):
            self.fields = self._plain_fields  # (an export's entry: each field once, no attributes)

    def _plain_fields(self, groups: tuple) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
        """`fields` where each field is one child's text, or none."""
        href = _nonblank(groups[self.link_texts[0]])
        title = _nonblank(groups[self.titles[0]]) if self.titles else None
        added = _nonblank(groups[self.dates[0]]) if self.dates else None
        return href, title, tuple([_decoded(groups[text]) for _, text in self.tags]), added

    def fields(self, groups: tuple) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
        """(link, title, tags, date) as the tree's reading makes them (`groups`: the match's, from 0)."""
        href = _first(groups, self.link_texts)
        if not href:
            for attributes in self.link_attributes:
                if groups[attributes] and (written := _attribute(groups[attributes], "href")) and _attribute(groups[attributes], "rel", "alternate") == "alternate":
                    href = written
                    break
        tags = tuple([(_attribute(groups[attributes], "term") if attributes is not None and groups[attributes] else None)
                      or _decoded(groups[text] or "") for attributes, text in self.tags])
        return href, _first(groups, self.titles), tags, _first(groups, self.dates)


def first_entry_name(text: str) -> str | None:
    """The name the feed's first entry is written with ("item", "atom:entry"), if it has a shape
    read here (a quick look, before a long feed's text is handed to a child process)."""
    start = _START.search(text)
    if start is None or _inside_markup(text, 0, start.start()) or _shape_at(text, start.start(), {}) is None:
        return None
    return start[0][1:]


def _inside_markup(text: str, start: int, end: int) -> bool:
    """Whether `end` may be inside a comment, CDATA or instruction begun after `start` (one that
    is not closed before `end`): an entry's start tag there is text. (A false alarm costs time only.)"""
    for opening, closing in _MARKUPS:
        begun = text.rfind(opening, start, end)
        if begun != -1 and text.find(closing, begun + len(opening), end) == -1:
            return True
    return False


def _nonblank(text: str) -> str | None:
    """A child's text, decoded, or None for a blank one (the tree's reading skips it)."""
    if "&" in text:
        text = _decoded(text)
    return None if not text or text.isspace() else text


def _first(groups: tuple, indices: tuple[int, ...]) -> str | None:
    """The first of these children's texts that is not blank."""
    for index in indices:
        if text := _nonblank(groups[index]):
            return text
    return None


def _shape_at(text: str, at: int, shapes: dict) -> _Shape | None:
    """The shape of the entry at `at`, or None if it has another (a child holding elements, a comment...)."""
    entry = _ENTRY.match(text, at)
    if entry is None or "\n" in text[at : entry.start(2)]:
        return None
    children: list[tuple[str, bool]] = []  # (its name, whether it has attributes)
    for other, name, attributes in _CHILD.findall(text, entry.start(2), entry.end(2)):
        local = name.rpartition(":")[2]
        if other or local in ("item", "entry"):
            return None  # (a comment, instruction or CDATA between them; an entry in it, as the tree has it)
        children.append((name, bool(attributes.strip())))
    key = (entry[1], tuple(children))
    if key not in shapes:
        if sum(len(children) + 1 for _, children in shapes) + len(children) + 1 > _SHAPE_CHILDREN_MOST:
            return None  # (a feed of many shapes, or of entries with many children: the tree's)
        shapes[key] = _Shape(*key)
    return shapes[key]


def _attribute(attributes: str, key: str, default: str | None = None) -> str | None:
    """The value of the attribute `key` (without a prefix) in a start tag's `attributes`, as lxml's `get`."""
    for match in _ATTRIBUTE.finditer(attributes):
        if match[1] == key:
            value = match[2] if match[2] is not None else match[3]
            return _decoded(value.translate(_WHITESPACE))
    return default


def _decoded(value: str) -> str:
    return _REFERENCE.sub(_character, value) if "&" in value else value


def _character(match: re.Match) -> str:
    named, decimal, hexadecimal = match.groups()
    if named:
        return _NAMED[named]
    try:
        return chr(int(decimal) if decimal else int(hexadecimal, 16))
    except (ValueError, OverflowError):  # (not a character: libxml2 finds the feed ill-formed, the text's reading is not taken)
        return "\ufffd"
