"""The links in one line of text: Markdown and HTML links, URLs, scheme-less domains and
relative paths, each trimmed of the sentence around it, titled by the text beside it and made
a `Link` (its page, or why it is skipped).

One place for what a link looks like: `text` asks these patterns a line's kind, and
`documents` makes the links given on the command line the way a seed's are made.
"""

from __future__ import annotations

import bisect
import operator
import re
from dataclasses import dataclass
from functools import lru_cache

from .. import urls
from .._types import Link
from .._util.text import decode_entities

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
_BULLET = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+(?:\[[ xX]\](?:\s+|$))?")  # a task list's box too
# A Markdown link reference definition: `[label]: url "title"`
_REFERENCE = re.compile(r"""^\s{0,3}\[([^\[\]]+)\]:\s*<?([^\s<>]+)>?(?:\s+(?:"([^"]*)"|'([^']*)'|\(([^()]*)\)))?\s*$""")
# What a reference definition's target must look like to be a link (`[TODO]: later` is prose):
# a scheme, a relative path, or a domain. `//host/x` is read by the passes for bare domains.
_REFERENCE_TARGET = re.compile(r"(?:[a-zA-Z][\w+.-]*:|\.{1,2}/|/(?!/)|[\w-]+(?:\.[\w-]+)+(?:[/:?#]|$))")
# A relative path written in prose (`./notes.md`, `../drafts/x.html`): a link with no site to fetch it from
_RELATIVE_PATH = re.compile(r"""(?<![\w/.~\-`])\.\.?/[^\s<>()\[\]"'`，。；、]+""")
_TRAILING = ".,;:!?'\"*_"


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    written: str
    title: str | None
    glued: bool = False  # stuck to the word before it: its end may be glued too
    label: str | None = None  # a reference definition's label, when it gave no title: the text of `[text][label]` titles it


def _make_link(hit: _Found, seed: str, line: int, title: str | None, section: str | None) -> Link:
    url, reason, candidates = _target(hit)
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


def _link(
    url: str,
    url_as_written: str,
    seed: str,
    line: int,
    col: int,
    title: str | None,
    section: str | None,
    skip_reason: str | None,
    candidates: tuple[str, ...],
    tags: str | None = None,
    added: str | None = None,
) -> Link:
    """Link(...) at a third of the cost: a frozen dataclass's __init__ sets each field
    through object.__setattr__ (a second per million links)."""
    link = _new_object(Link)
    _set_attribute(
        link,
        "__dict__",
        {
            "url": url,
            "url_as_written": url_as_written,
            "seed": seed,
            "line": line,
            "col": col,
            "title": title,
            "section": section,
            "skip_reason": skip_reason,
            "candidates": candidates,
            "tags": tags,
            "added": added,
        },
    )
    return link


def _reference(line: str) -> re.Match[str] | None:
    """`[label]: url "title"`, when its target is a link (see _REFERENCE_TARGET)."""
    ref = _REFERENCE.match(line)
    return ref if ref is not None and _REFERENCE_TARGET.match(ref[2]) else None


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


def _find_links(line: str) -> list[_Found]:
    stripped = line.strip()
    if stripped[:1] == "[" and "]:" in stripped and (ref := _reference(line)):
        title = ref[3] or ref[4] or ref[5]
        label = None if title else ref[1]
        return [_Found(ref.start(2), ref.end(2), _trim_url(ref[2]), _clean_title(title or ref[1]) or None, label=label)]
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
        written = written[start - m.start() :]
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
    before = re.findall(r"[A-Za-z0-9]+", line[max(0, start - 200) : start].lower())  # the cells just before
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
    next_start = hits[i + 1].start if i + 1 < len(hits) else len(line)
    before, after = line[prev_end : hit.start].rstrip(), line[hit.end : next_start].lstrip()
    if before[-1:] in _OPENERS and after[:1] in _CLOSERS:  # <URL>, (URL), （URL）: the brackets are no title
        before, after = before[:-1], after[1:].lstrip()
        if after[:1].isalnum():  # a sentence goes on after the brackets ("另见（URL）和 …"): the words around are prose
            return None
    if before.lstrip()[:1] in _CLOSERS:  # the rest of the sentence around the link before ("…）和 URL")
        before = ""
    title = _clean_title(before)
    if title:
        return title
    return _clean_title(after) or None


_OPENERS = frozenset("(（[【<《「『")
_CLOSERS = frozenset(")）]】>》」』")


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
    if "&" in text:  # `&amp;`, `&raquo;`: their characters, as CommonMark reads them
        text = decode_entities(text)
    return text.strip(" \t-–—|>:：,，;；").strip()
