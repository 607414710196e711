"""Plain-text and Markdown seeds -> links: each line's kind (a URL, links in prose, a heading,
a label, a rule...) and the links on it, then the titles and sections the lines around give them.
"""

from __future__ import annotations

import re

from .._types import Link
from .links import (
    _BARE_DOMAIN,
    _BULLET,
    _HTML_A,
    _MD_LINK,
    _RELATIVE_PATH,
    _URL,
    _clean_title,
    _find_links,
    _Found,
    _make_link,
    _reference,
    _whole_url,
)

__all__ = ["parse_text", "text_title"]

# lines that hold no link but name the section of the links after them (a sentence is no heading)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(\*\*|__)([^*_].*?)\1\s*[:：]?\s*$")
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?([^\s:：].{0,38}?)\s*[:：]\s*$")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_SENTENCE_END = re.compile(r"[。，,.!?！？；;、]")


def text_title(text: str) -> str | None:
    """The list's own title: its first level-1 heading (`# Reading on attention`), if any."""
    lines = text.splitlines()
    for line in lines[_front_matter_end(lines) :]:
        heading = _HEADING.match(line)
        if heading and heading[1] == "#":
            return _clean_title(heading[2]) or None
    return None


def parse_text(text: str, seed: str) -> list[Link]:
    """Links in a plain-text or Markdown seed, with their titles and sections."""
    lines = text.splitlines()
    kinds, found = _read_lines(lines, _front_matter_end(lines))
    _title_references(lines, kinds, found)
    titles, consumed = _neighbour_titles(lines, kinds)

    links: list[Link] = []
    section: str | None = None
    for i, (line, kind, hits) in enumerate(zip(lines, kinds, found, strict=True)):
        if kind == "heading" and (heading := _HEADING.match(line)):
            section = _clean_title(heading[2])
        elif kind == "label":
            section = _label_text(line)
        elif kind == "text" and i not in consumed and _is_plain_heading(lines, kinds, i):
            section = _clean_title(line)
        for hit in hits:
            title = hit.title if kind == "inline" else (hit.title or titles.get(i))
            links.append(_make_link(hit, seed, i + 1, title, section))
    return links


def _read_lines(lines: list[str], start: int) -> tuple[list[str], list[list[_Found]]]:
    """Each line's kind and the links on it (lines before `start` are front matter)."""
    kinds: list[str] = []
    found: list[list[_Found]] = []
    none: list[_Found] = []  # (shared: never appended to)
    for i, line in enumerate(lines):  # one pass: _find_links asks _whole_url about the line _kind just did
        kind = _kind(line) if i >= start else "meta"
        kinds.append(kind)
        found.append(_find_links(line) if kind in ("url", "inline") else none)
    return kinds, found


# a Markdown reference link, `[FlashAttention 论文][fa]` (full), `[fa][]` (collapsed) or `[fa]` (shortcut): its text, its label
_REFERENCE_USE = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\](?:[ \t]?\[([^\[\]]*)\]|(?![(:]))")


def _title_references(lines: list[str], kinds: list[str], found: list[list[_Found]]) -> None:
    """A reference definition without a title of its own (`[fa]: https://…`) is titled by the text
    of the first link that uses it (`[FlashAttention 论文][fa]`), as a reader of the rendered
    Markdown sees it, else by its label; a line that uses one is prose (no heading, no title of
    the URL next to it). Labels match as CommonMark matches them: case and spacing aside."""
    defined = {_label_key(hit.label): hit for hits in found for hit in hits if hit.label}
    if not defined:
        return
    titled: set[str] = set()
    for i, line in enumerate(lines):
        if "[" not in line or kinds[i] in ("meta", "url") or (kinds[i] == "inline" and _reference(line)):
            continue
        for use in _REFERENCE_USE.finditer(line):
            key = _label_key(use[2] or use[1])
            if key not in defined:
                continue
            if kinds[i] == "text":
                kinds[i] = "prose"
            text = _clean_title(use[1])
            if key not in titled and text:
                titled.add(key)
                defined[key].title = text


def _label_key(label: str) -> str:
    return " ".join(label.split()).casefold()


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after Jekyll/Hugo front matter (0 if none)."""
    if lines and lines[0].strip() == "---":
        for i in range(1, min(len(lines), 100)):
            if lines[i].strip() in ("---", "..."):
                return i + 1
    return 0


def _kind(line: str) -> str:
    stripped = line.strip()
    if not stripped:
        return "blank"
    if ":" in stripped and _whole_url(stripped):
        return "url"  # the commonest line, in one match
    if stripped[0] == "[" and "]:" in stripped and _reference(line):
        return "inline"  # `[label]: url`: its label is its title
    has_url = ":" in line and _URL.search(line)
    if has_url or _may_link(line) and (_MD_LINK.search(line) or _HTML_A.search(line) or _BARE_DOMAIN.search(line)):
        return "url" if has_url and _only_urls(_BULLET.sub("", line, count=1)) else "inline"
    # each pattern needs its first or last character: most lines are tested by a look at both ends
    first, last = stripped[0], stripped[-1]
    if first == "#" and _HEADING.match(line):
        return "heading"
    if first in "-*_" and _RULE.match(line):
        return "rule"
    if last in ":：*_" and (_BOLD_LABEL.match(line) or _LABEL.match(line)):
        return "label"
    if "./" in line and _RELATIVE_PATH.search(line):  # (a heading or label that mentions one stays what it is)
        return "inline"
    return "text"


def _only_urls(text: str) -> bool:
    """Nothing but URLs and spaces; text before the first URL answers most lines in one search."""
    first = _URL.search(text)
    if first is not None and text[: first.start()].strip():
        return False
    return not _URL.sub("", text).strip()


def _may_link(line: str) -> bool:
    """Cheap test before the costly patterns: every link form holds one of these."""
    return "." in line or "](" in line or "<" in line


def _label_text(line: str) -> str:
    if bold := _BOLD_LABEL.match(line):
        return _clean_title(bold[2])
    label = _LABEL.match(line)
    return _clean_title(label[1] if label else line)


def _neighbour_titles(lines: list[str], kinds: list[str]) -> tuple[dict[int, str], set[int]]:
    """Titles for lines that hold only a URL, from the line before or after.

    Browser "copy title + link" puts the title first; some notes put the URL
    first and describe it on the next line. Each document uses one style, so
    we count both patterns and follow the more common one.
    """
    n = len(lines)
    url_lines = [i for i, kind in enumerate(kinds) if kind == "url"]
    before = {i: i - 1 for i in url_lines if i and kinds[i - 1] == "text"}
    after: dict[int, int] = {}
    for i in url_lines:
        if i in before:
            continue
        j = i + 1 if i + 1 < n and kinds[i + 1] != "blank" else i + 2
        if j < n and kinds[j] == "text" and not (j + 1 < n and kinds[j + 1] == "url"):
            after[i] = j
    chosen = after if len(after) > len(before) else before
    titles = {i: _clean_title(lines[j]) for i, j in chosen.items()}
    return titles, set(chosen.values())


def _is_plain_heading(lines: list[str], kinds: list[str], i: int) -> bool:
    """A short line standing alone between blank lines ("mlsys blog", "训练框架")."""
    text = lines[i].strip()
    if len(text) > 30 or _SENTENCE_END.search(text) or text.startswith(("*", "{", "<")):
        return False
    alone_before = i == 0 or kinds[i - 1] in ("blank", "rule", "meta")
    alone_after = i + 1 >= len(lines) or kinds[i + 1] in ("blank", "rule")
    return alone_before and alone_after
