"""Which pages a browser can improve, and whether a render did.

A render costs seconds where an HTTP fetch costs milliseconds, so `--browser auto` renders a page
only on evidence in its HTTP capture that the article is made by scripts: a JavaScript challenge,
an application shell (an empty root element or a "please enable JavaScript" notice on a page of
few words), no text at all on a page that runs scripts, or little text on a large page that is
mostly script. A page with no script cannot be changed by a browser. A page the browser could not
improve is not rendered again while its HTTP text stays the same (`pages.render_basis`).

A render replaces the HTTP article only when it is better by mirror's own measures — an article
where the capture had none, or clearly more words — and not worse in encoding: no more U+FFFD
replacement characters, and on a Chinese page no lower share of common Han characters (what
mojibake lowers first; `extract.charset`).
"""

from __future__ import annotations

import re

from .._enums import BrowserMode, PageStatus
from .._types import Extraction
from .._util.text import count
from ..extract.charset import MIN_COMMON, MIN_HAN, common_share

__all__ = ["CHALLENGES", "HEAD_BYTES", "better", "evidence", "needs_head"]

# `blocked` reasons (see mirror.http.blocked) that a real browser can get past; sign-in walls need --cookies.
CHALLENGES = ("Cloudflare challenge", "zhihu anti-bot check", "WeChat verification page")
SHELL_WORDS = 100  # fewer words and an app root or a JavaScript notice: an application shell
THIN_WORDS = 150  # fewer words on a page of BIG_PAGE bytes, most of them script: the script makes the article
BIG_PAGE = 50_000
SCRIPT_SHARE = 0.5
HEAD_BYTES = 300_000  # what is read of a capture to judge it
MORE_WORDS = 1.1  # a render must have this many times the HTTP article's words ...
MIN_GAIN = 20  # ... and at least this many more
HAN_SLACK = 0.05  # how much lower a render's share of common Han characters may be (added comments, names)

_SHELL = re.compile(
    rb"""<div[^>]+id\s*=\s*["']?(?:root|app|__next|__nuxt|svelte)\b[^>]*>\s*</div>"""
    rb"|<noscript[^>]*>[^<]{0,300}\b(?:enable|requires?|need)\b[^<]{0,60}javascript",
    re.I,
)
_SCRIPT = re.compile(rb"<script\b[^>]*>(.*?)</script\s*>", re.I | re.S)
_ANY_SCRIPT = re.compile(rb"<script\b", re.I)


def needs_head(mode: BrowserMode, status: PageStatus | None, word_count: int) -> bool:
    """Whether the capture's HTML must be read to decide (most articles are decided by their words)."""
    return mode is BrowserMode.ALWAYS or status != PageStatus.ARCHIVED or word_count < THIN_WORDS


def evidence(mode: BrowserMode, status: PageStatus | None, word_count: int, blocked: str | None, head: bytes | None) -> str | None:
    """Why the page's HTTP capture should be rendered (None: it should not).

    `status` is its extraction's (None: not extracted, a blocked answer), `blocked` the blocked
    reason of an anti-bot or login answer, `head` the first HEAD_BYTES of its HTML (None: not HTML)."""
    if head is None:
        return None
    if blocked is not None:
        return "a JavaScript challenge" if blocked.startswith(CHALLENGES) else None  # a sign-in wall needs cookies, not a browser
    if mode is BrowserMode.ALWAYS:
        return "--browser always"
    if not _ANY_SCRIPT.search(head):
        return None  # nothing a browser would run
    if status != PageStatus.ARCHIVED:
        return "no text, and scripts"
    if word_count < SHELL_WORDS and _SHELL.search(head):
        return "an application shell"
    if word_count < THIN_WORDS and len(head) >= BIG_PAGE and _script_bytes(head) >= SCRIPT_SHARE * len(head):
        return "little text on a large page that is mostly script"
    return None


def _script_bytes(head: bytes) -> int:
    return sum(len(m[1]) for m in _SCRIPT.finditer(head))


def better(render: Extraction | None, http: Extraction | None) -> tuple[str, str]:
    """Which article the page keeps, and why (for `render_note`): "render" (the render's),
    "http" (the HTTP capture's, at least as good) or "none" (the render has no usable article)."""
    if render is None or render.status != PageStatus.ARCHIVED:
        return "none", "the render has no article"
    if not _encoding_not_worse(render, http):
        return "none", "the render's text decodes worse than the HTTP capture's (replacement characters or rare Han characters)"
    if http is None or http.status != PageStatus.ARCHIVED:
        return "render", "the HTTP capture had no article"
    if render.word_count >= max(http.word_count * MORE_WORDS, http.word_count + MIN_GAIN):
        return "render", f"{count(render.word_count, 'word')} where the HTTP capture had {http.word_count}"
    return "http", f"no more text than the HTTP capture ({count(render.word_count, 'word')} against {http.word_count})"


def _encoding_not_worse(render: Extraction, http: Extraction | None) -> bool:
    ours = f"{render.title or ''}\n{render.text or ''}"
    theirs = f"{http.title or ''}\n{http.text or ''}" if http is not None else ""
    if ours.count("\ufffd") > theirs.count("\ufffd"):
        return False
    han, share = common_share(ours)
    if han < MIN_HAN:
        return True
    their_han, their_share = common_share(theirs)
    if their_han < MIN_HAN:  # nothing Chinese to compare with (a challenge page): the render must read as Chinese itself
        return share >= MIN_COMMON
    return share >= their_share - HAN_SLACK
