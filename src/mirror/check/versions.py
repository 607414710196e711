"""What a capture or a check found against the page's version before: its state (first, same,
changed, moved, gone, soft 404, blocked, needs_browser, failed), how much the text changed and why, and whether
a 200 is a bad answer that must not replace the saved article. The store records what is judged
here (`store.versions`); `Before` reads what the archive holds of the page, with plain SQL."""

from __future__ import annotations

import functools
import time
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from .._types import CaptureKind, Extraction, PageResult, PageStatus, Reason, VersionState
from .._util.similar import changed_fraction, same_text, text_hash
from .soft404 import sign_in

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["DEAD_AFTER", "Before", "VersionFound", "bad_answer", "version_state"]

DEAD_AFTER = 24 * 3600.0  # seconds: a host dead on two checks this far apart has taken its pages with it
_GONE_STATUSES = frozenset({404, 410})


class Before:
    """What the page was before this capture: its saved copy's text and address, and its latest versions."""

    def __init__(self, db: sqlite_utils.Database, url: str, had_capture: bool):
        row = (
            db.execute("select final_url, warc_file, warc_offset, status, capture, render_basis from pages where url = ?", [url]).fetchone()
            if had_capture
            else None
        )
        self.db, self.url, self.had_capture = db, url, had_capture
        self.final_url: str | None
        self.status: str | None
        self.capture: str | None
        self.render_basis: str | None
        self.final_url, file, offset, self.status, self.capture, self.render_basis = row if row else (None,) * 6
        saved = (
            db.execute("select max(id) from versions where page_url = ? and warc_file = ? and warc_offset = ?", [url, file, offset]).fetchone()
            if file
            else None
        )
        self.saved_version = saved[0] if saved else None  # the version the saved copy is
        alive = db.execute("select max(id) from versions where page_url = ? and error is null", [url]).fetchone()[0]
        # the first of the checks since it last answered that found its host dead (no such name,
        # connection refused: not a resolver that gave no answer, nor an offline machine)
        self.dead_since = db.execute(
            "select min(captured_at) from versions where page_url = ? and id > ? and host_dead = 1", [url, alive or 0]
        ).fetchone()[0]

    @functools.cached_property
    def text(self) -> str | None:
        """The saved copy's article text (read only when a new text is to be compared with it)."""
        if not self.had_capture:
            return None
        return self.db.execute("select text from pages where url = ?", [self.url]).fetchone()[0]


def bad_answer(result: PageResult, extraction: Extraction | None, before: Before) -> tuple[Reason, str] | None:
    """Why a 200 that was extracted is no new version of an article the page had, but a bad
    answer that must not replace it: no article any more (an emptied page, a maintenance page, an
    image or JSON where the article was), or a redirect to another page with another text; or a
    redirect to a sign-in form (`blocked`: the article may be there for a reader who signs in)."""
    final = result.final
    if not final.ok or final.status == 304 or final.revisit or not before.had_capture or extraction is None:
        return None
    if reason := sign_in(result.url, final.final_url, extraction.title, extraction.text, extraction.word_count or 0):
        return Reason.BLOCKED, reason  # the article may be there still, for a reader who signs in
    if before.status == PageStatus.ARCHIVED and extraction.status != PageStatus.ARCHIVED:
        return Reason.SOFT_404, "soft 404: the page has no article any more (an empty or maintenance page, or not a page)"
    if final.redirects and before.final_url and not _same_address(final.final_url, before.final_url) and not same_text(before.text, extraction.text):
        return Reason.SOFT_404, f"soft 404: redirected to another page with another text ({final.final_url[:300]})"
    return None


class VersionFound(NamedTuple):
    state: VersionState
    changed: float | None  # the share of the text that changed
    note: str | None  # why, for a person


def version_state(result: PageResult, extraction: Extraction | None, before: Before, shell: bool = False) -> VersionFound:
    """What this capture or check found: its state, how much the text changed, and why (for a person).

    `shell`: the saved copy is a browser's render, and this is a plain HTTP answer no render
    improved on: the page's JavaScript shell, never compared with the rendered article. It is
    `same` while the shell's text is the one the render was made from, else `needs_browser`."""
    final = result.final
    if final.ok:
        if not before.had_capture:
            return VersionFound(VersionState.FIRST, None, None)
        if final.status == 304 or final.revisit:  # (the HTTP status, or revisit_of, says which)
            return VersionFound(VersionState.SAME, 0.0, None)
        render = result.render
        if render is not None and render.won and before.capture != CaptureKind.BROWSER and render.basis == text_hash(before.text):
            # the first render of a page saved over plain HTTP, whose HTTP text is the saved one: a
            # better reading of an unchanged page, not a change (its article is the render's now)
            return VersionFound(VersionState.SAME, 0.0, "rendered in a browser for the first time; the page's own text is unchanged")
        if shell:
            if extraction is not None and before.render_basis and text_hash(extraction.text) == before.render_basis:
                return VersionFound(VersionState.SAME, 0.0, "the page's shell is unchanged (its saved copy was rendered in a browser)")
            return VersionFound(
                VersionState.NEEDS_BROWSER,
                None,
                ("the saved copy was rendered in a browser; plain HTTP sees only the page's shell, which changed: check it with the browser"),
            )
        text = extraction.text if extraction is not None else None
        changed = changed_fraction(before.text, text)
        if changed == 0.0 or same_text(before.text, text):
            moved = final.redirects and before.final_url and not _same_address(final.final_url, before.final_url)
            if moved:
                return VersionFound(VersionState.MOVED, changed, f"now at {final.final_url[:300]}")
            if changed == 0.0:
                return VersionFound(VersionState.SAME, 0.0, None)
        return VersionFound(VersionState.CHANGED, changed, None)
    error = final.error
    if error == Reason.SOFT_404:
        return VersionFound(VersionState.SOFT_404, None, final.message)
    if error == Reason.BLOCKED:
        return VersionFound(VersionState.BLOCKED, None, final.message)
    if final.status in _GONE_STATUSES:  # gone: it was archived and went; a page never archived just failed (one name everywhere)
        return VersionFound(VersionState.GONE if before.had_capture else VersionState.FAILED, None, final.message)
    if final.host_dead and before.dead_since and _age(before.dead_since) >= DEAD_AFTER:
        return VersionFound(VersionState.GONE, None, f"{final.message} (the host has been dead since {before.dead_since})")
    return VersionFound(VersionState.FAILED, None, final.message)


def _same_address(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _age(stamp: str) -> float:
    try:
        return time.time() - datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0
