"""Seed documents -> link inventory.

Reading lists come as browser "copy title + link" text, Markdown notes, text
copied from rendered web pages (table cells glued together) and HTML bookmark
exports. Every link found becomes a `Link` carrying where it came from.
"""

from __future__ import annotations

import bisect
import operator
import re
import zlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from . import urls
from ._child_call import ChildCall
from ._gc import gc_paused
from ._types import COMMAND_LINE, Link

__all__ = ["Inventory", "Link", "SeedError", "decode_seed", "links_from_urls", "parse_text", "read_seeds"]


class SeedError(Exception):
    """A source the user named cannot be read at all."""


@dataclass
class Inventory:
    links: list[Link] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seeds: list[str] = field(default_factory=list)  # every seed document read

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
                _read_one(path, _seed_name(path, base), inventory)
    return inventory




def links_from_urls(written: list[str]) -> Inventory:
    """An inventory of URLs given on the command line (`mirror fetch URL...`)."""
    inventory = Inventory(seeds=[COMMAND_LINE] if written else [])
    for url in written:
        hit = _Found(0, len(url), url.strip(), None)
        link = _make_link(hit, COMMAND_LINE, 0, None, None)
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
    if _looks_like_html(path, text):
        from ._html_seeds import parse_html

        links = parse_html(text, name)
    else:
        links = parse_text(text, name)
    if not links:
        inventory.warnings.append(f"{name}: no links found")
    inventory.links.extend(links)


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


def _seed_name(path: Path, base: Path) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


# --- plain text and Markdown -------------------------------------------------

# Any non-ASCII character ends a URL: pages copied from the web glue URLs to
# Chinese text ("DeepSpeedhttps://github.com/microsoft/DeepSpeed微软...").
_URL = re.compile(
    r"(?i)(?:https?|ftps?|file)://[!#-;=?-~]+"  # printable ASCII except space " < >
    r"|\bmailto:[\w.+\-]+@[\w.\-]+"
    r"|\bdata:[\w.+\-]+/[\w.+\-]+[;,][!#-;=?-~]*"
)
_MD_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?((?:[^()\s<>]|\([^()\s]*\))+)>?(?:\s+[\"'][^\"']*[\"'])?\s*\)")
# The anchor text may not run into another <a: an unclosed <a> costs one scan, not one per tag.
_HTML_A = re.compile(r"""(?is)<a\s[^>]*?href\s*=\s*["']([^"']+)["'][^>]*>((?:(?!<a\s|</a>).)*)</a>""")
_CLOSE_A = re.compile("(?i)</a>")  # which _HTML_A needs: without it, no scan of every <a
# Scheme-less domains such as reddit.com/r/MachineLearning, limited to common TLDs.
_TLDS = "com|org|net|io|ai|cn|gg|me|dev|app|co|edu|gov|info|tech|cc|tv|uk|de|jp|fr|xyz|site|blog|wiki"
_BARE_DOMAIN = re.compile(
    rf"(?<![A-Za-z0-9_@.\-])((?:www\.)?[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[a-z0-9\-]+)*\.(?:{_TLDS}))"
    r"(?![A-Za-z0-9_\-])((?:/[!#-;=?-~]*)?)"
)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(\*\*|__)([^*_].*?)\1\s*[:：]?\s*$")
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?([^\s:：].{0,38}?)\s*[:：]\s*$")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_BULLET = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+(?:\[[ xX]\](?:\s+|$))?")  # a task list's box too
# A Markdown link reference definition: `[label]: url "title"`
_REFERENCE = re.compile(r"""^\s{0,3}\[([^\[\]]+)\]:\s*<?([^\s<>]+)>?(?:\s+(?:"([^"]*)"|'([^']*)'|\(([^()]*)\)))?\s*$""")
# What a reference definition's target must look like to be a link (`[TODO]: later` is prose):
# a scheme, a relative path, or a domain. `//host/x` is read by the passes for bare domains.
_REFERENCE_TARGET = re.compile(r"(?:[a-zA-Z][\w+.-]*:|\.{1,2}/|/(?!/)|[\w-]+(?:\.[\w-]+)+(?:[/:?#]|$))")
# A relative path written in prose (`./notes.md`, `../drafts/x.html`): a link with no site to fetch it from
_RELATIVE_PATH = re.compile(r"""(?<![\w/.~\-`])\.\.?/[^\s<>()\[\]"'`，。；、]+""")
_TRAILING = ".,;:!?'\"*_"
_SENTENCE_END = re.compile(r"[。，,.!?！？；;、]")


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    written: str
    title: str | None
    glued: bool = False  # stuck to the word before it: its end may be glued too
    target: tuple | None = None  # what _target() returns, when a child process worked it out


def parse_text(text: str, seed: str) -> list[Link]:
    """Links in a plain-text or Markdown seed, with their titles and sections."""
    lines = text.splitlines()
    start = _front_matter_end(lines)
    if len(lines) >= _SPLIT_LINES:
        kinds, found = _lines_on_two_cores(lines, start)
    else:
        kinds, found = _read_lines(lines, start)
    titles, consumed = _neighbour_titles(lines, kinds)

    links: list[Link] = []
    section: str | None = None
    for i, (line, kind, hits) in enumerate(zip(lines, kinds, found, strict=True)):
        if kind == "heading":
            section = _clean_title(_HEADING.match(line)[2])
        elif kind == "label":
            section = _label_text(line)
        elif kind == "text" and i not in consumed and _is_plain_heading(lines, kinds, i):
            section = _clean_title(line)
        for hit in hits:
            title = hit.title if kind == "inline" else (hit.title or titles.get(i))
            links.append(_make_link(hit, seed, i + 1, title, section))
    return links


_SPLIT_LINES = 200_000  # a seed this long has its lines read on two cores


def _read_lines(lines: list[str], start: int, offset: int = 0) -> tuple[list[str], list[list[_Found]]]:
    """Each line's kind and the links on it (lines before `start` are front matter)."""
    kinds: list[str] = []
    found: list[list[_Found]] = []
    none: list[_Found] = []  # (shared: never appended to)
    for i, line in enumerate(lines, offset):  # one pass: _find_links asks _whole_url about the line _kind just did
        kind = _kind(line) if i >= start else "meta"
        kinds.append(kind)
        found.append(_find_links(line) if kind in ("url", "inline") else none)
    return kinds, found


def _lines_on_two_cores(lines: list[str], start: int) -> tuple[list[str], list[list[_Found]]]:
    """`_read_lines` and each link's `_target`, the second half in a child process meanwhile.

    Lines are independent of each other here (titles and sections come later, from all of
    them), so the halves put together are what one pass finds. Without the child's answer,
    this process reads the second half too.
    """
    half = len(lines) * 11 // 20  # the child starts a Python first: a little less for it
    # splitlines() left no "\n" inside a line: joined with it, the half splits back exactly
    with ChildCall("mirror.seeds", "_read_lines_for_parent", "\n".join(lines[half:]), start, half) as child:
        kinds, found = _read_lines(lines[:half], start)
        for hits in found:  # as the child does for its half
            for hit in hits:
                hit.target = _target(hit)
        answer = child.result()
    if answer is None:
        more_kinds, more_found = _read_lines(lines[half:], start, half)
    else:
        more_kinds, rows = answer
        none: list[_Found] = []
        more_found = [[_Found(*hit) for hit in hits] if hits else none for hits in rows]
    return kinds + more_kinds, found + more_found


def _read_lines_for_parent(text: str, start: int, offset: int) -> tuple[list[str], list[list[tuple] | None]]:
    """(In the child process.) `_read_lines` of the lines of `text`, each link as a tuple with its `_target`."""
    kinds, found = _read_lines(text.split("\n"), start, offset)
    rows = [[(h.start, h.end, h.written, h.title, h.glued, _target(h)) for h in hits] if hits else None for hits in found]
    return kinds, rows


def _make_link(hit: _Found, seed: str, line: int, title: str | None, section: str | None) -> Link:
    url, reason, candidates = hit.target or _target(hit)
    return _link(url, hit.written, seed, line, hit.start + 1, title or None, section, reason, candidates)


def _target(hit: _Found) -> tuple[str, str | None, tuple[str, ...]]:
    """The link's page (normalized URL), why it is skipped and its glued-URL repairs:
    what the text around it does not change."""
    written = hit.written
    url = None if hit.glued else urls.normalize_plain(written)
    if url is not None:  # nearly every link: fetchable, no glued repairs to try
        return url, None, ()
    target = written
    if "://" not in written and _BARE_DOMAIN.fullmatch(written) and urls.skip_reason(written):
        target = "https://" + written  # scheme-less domain: the web's default today
    reason = urls.skip_reason(target)
    candidates = urls.glue_candidates(target) if hit.glued and not reason else ()
    return target if reason else urls.normalize(target), reason, tuple(map(urls.normalize, candidates)) if candidates else ()


_new_object, _set_attribute = object.__new__, object.__setattr__


def _link(url, url_as_written, seed, line, col, title, section, skip_reason, candidates) -> Link:  # noqa: PLR0913
    """Link(...) at a third of the cost: a frozen dataclass's __init__ sets each field
    through object.__setattr__ (a second per million links)."""
    link = _new_object(Link)
    _set_attribute(link, "__dict__", {
        "url": url, "url_as_written": url_as_written, "seed": seed, "line": line, "col": col,
        "title": title, "section": section, "skip_reason": skip_reason, "candidates": candidates,
    })
    return link


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


def _reference(line: str) -> re.Match | None:
    """`[label]: url "title"`, when its target is a link (see _REFERENCE_TARGET)."""
    ref = _REFERENCE.match(line)
    return ref if ref is not None and _REFERENCE_TARGET.match(ref[2]) else None


def _only_urls(text: str) -> bool:
    """Nothing but URLs and spaces; text before the first URL answers most lines in one search."""
    first = _URL.search(text)
    if first is not None and text[: first.start()].strip():
        return False
    return not _URL.sub("", text).strip()


class _Spans:
    """Parts of a line already taken by a link, sorted, for O(log n) overlap tests."""

    __slots__ = ("ends", "pending", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.pending: list[tuple[int, int]] = []

    def free(self, start: int, end: int) -> bool:
        if not self.starts:
            return True
        i = bisect.bisect_right(self.starts, start)
        if i and self.ends[i - 1] > start:
            return False
        return i == len(self.starts) or self.starts[i] >= end

    def take(self, start: int, end: int) -> None:
        self.pending.append((start, end))  # a pass's own matches never overlap each other

    def outside(self, line: str) -> str:
        """The text of `line` that no link has taken."""
        if not self.starts:
            return line
        if len(self.starts) == 1:
            return line[: self.starts[0]] + line[self.ends[0] :]
        bounds = [0, *(x for pair in zip(self.starts, self.ends, strict=True) for x in pair), len(line)]
        return "".join(line[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2))

    def commit(self) -> None:
        if not self.pending:
            return
        if not self.starts:  # a pass's matches come in order
            self.starts, self.ends = [a for a, _ in self.pending], [b for _, b in self.pending]
        else:
            spans = sorted([*zip(self.starts, self.ends, strict=True), *self.pending])
            self.starts, self.ends = [a for a, _ in spans], [b for _, b in spans]
        self.pending = []


@lru_cache(maxsize=16)  # _kind() and _find_links() ask in turn about the same line
def _whole_url(stripped: str) -> bool:
    """The (stripped) line is one URL and nothing else: the commonest line."""
    return _URL.fullmatch(stripped) is not None


def _may_link(line: str) -> bool:
    """Cheap test before the costly patterns: every link form holds one of these."""
    return "." in line or "](" in line or "<" in line


def _find_links(line: str) -> list[_Found]:
    stripped = line.strip()
    if stripped[:1] == "[" and "]:" in stripped and (ref := _reference(line)):
        title = ref[3] or ref[4] or ref[5] or ref[1]
        return [_Found(ref.start(2), ref.end(2), _trim_url(ref[2]), _clean_title(title) or None)]
    if "](" not in line and ":" in stripped and _whole_url(stripped):
        # a line that is one URL (the commonest): what the passes below would find, in one match
        start = len(line) - len(line.lstrip())
        written = _trim_url(stripped)
        hits = [_Found(start, start + len(written), written, None)]
        if len(written) < len(line):  # (else no text beside it)
            hits[0].title = _inline_title(line, hits, 0)
        return hits
    hits = []
    taken = _Spans()
    for m in _MD_LINK.finditer(line) if "](" in line else ():
        hits.append(_Found(m.start(3), m.end(3), m[3], _clean_title(m[2]) or None))
        taken.take(m.start(), m.end())
    taken.commit()
    for m in _HTML_A.finditer(line) if "<" in line and _CLOSE_A.search(line) else ():
        if taken.free(m.start(), m.end()):
            hits.append(_Found(m.start(1), m.end(1), m[1], _clean_title(_TAG.sub("", m[2])) or None))
            taken.take(m.start(), m.end())
    taken.commit()
    free, take = taken.free, taken.take  # (per URL of a line that may hold a million)
    for m in _URL.finditer(line) if ":" in line else ():
        start, end = m.span()
        if not free(start, end):
            continue
        written = _trim_url(m[0])
        end = start + len(written)
        hits.append(_Found(start, end, written, None, start > 0 and line[start - 1].isalnum()))
        take(start, end)
    taken.commit()
    for m in _BARE_DOMAIN.finditer(line) if "." in taken.outside(line) else ():
        if not taken.free(m.start(), m.end()):
            continue
        start, written = _unglue_domain(line, m.start(), m[1]), _trim_url(m[0])
        written = written[start - m.start():]
        hits.append(_Found(start, start + len(written), written, None))
        taken.take(m.start(), m.end())
    taken.commit()
    for m in _RELATIVE_PATH.finditer(line) if "./" in taken.outside(line) else ():
        if taken.free(m.start(), m.end()):  # recorded, as skipped: the user sees it was not fetched
            written = _trim_url(m[0])
            hits.append(_Found(m.start(), m.start() + len(written), written, None))
            taken.take(m.start(), m.end())
    if len(hits) > 1:
        hits.sort(key=_start_of)
    for i, hit in enumerate(hits):
        if hit.title is None and not hit.written[:7].lower().startswith(("mailto:", "data:")):
            hit.title = _inline_title(line, hits, i)  # (the prose around an e-mail address is no title)
    return hits


_start_of = operator.attrgetter("start")
_OPENING = {")": "(", "]": "[", "}": "{"}
_TRAILING_OR_CLOSING = frozenset(_TRAILING + ")]}")


def _trim_url(url: str) -> str:
    """Drop punctuation that ends the sentence rather than the URL."""
    if url[-1:] not in _TRAILING_OR_CLOSING:
        return url
    balance = None  # counted once, when a closing bracket is met (most trailing marks are not)
    end = len(url)
    while end and url[end - 1] in _TRAILING_OR_CLOSING:
        last = url[end - 1]
        if last in _OPENING:
            if balance is None:
                balance = {close: url.count(close) - url.count(opening) for close, opening in _OPENING.items()}
            if balance[last] <= 0:  # closes a bracket the URL opened: part of it
                break
            balance[last] -= 1
        end -= 1
    return url[:end]


def _unglue_domain(line: str, start: int, host: str) -> int:
    """Where a scheme-less domain really starts when glued to the word before it.

    "Stack Overflowstackoverflow.com" and "Reddit r/MachineLearningreddit.com"
    come from table cells run together; the cell before usually names the site,
    so we cut where the rest of the first label echoes the words before it.
    """
    label = host.split(".")[0]
    if label.islower() or label.isdigit():
        return start
    before = re.findall(r"[A-Za-z0-9]+", line[max(0, start - 200):start].lower())  # the cells just before
    for cut in range(1, len(label)):
        rest, glued = label[cut:], label[:cut]
        if not rest[0].islower():
            continue
        echoes = set(before) | {"".join(before[-k:]) + glued.lower() for k in range(1, 4)}
        if rest.lower() in echoes:
            return start + cut
    return start


def _inline_title(line: str, hits: list[_Found], i: int) -> str | None:
    """Text beside a URL in running text: the table cell or label before it, else after.

    `hits` are sorted and never overlap: the neighbours bound the text.
    """
    hit = hits[i]
    prev_end = hits[i - 1].end if i else 0
    before = _clean_title(line[prev_end:hit.start])
    if before:
        return before
    next_start = hits[i + 1].start if i + 1 < len(hits) else len(line)
    return _clean_title(line[hit.end:next_start]) or None


_EMPHASIS = re.compile(r"\*\*|(?<!\w)\*|\*(?!\w)|`")
_TAG = re.compile(r"<[^>]+>")


def _clean_title(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    if text[0] in "-*+>" or text[0].isdigit():  # what a bullet starts with
        text = _BULLET.sub("", text, count=1)
    if "*" in text or "`" in text:
        text = _EMPHASIS.sub("", text)
    text = " ".join(text.split())  # runs of whitespace as one space, as \s+ would
    return text.strip(" \t-–—|>:：,，;；").strip()


def _label_text(line: str) -> str:
    m = _BOLD_LABEL.match(line)
    return _clean_title(m[2] if m else _LABEL.match(line)[1])


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
