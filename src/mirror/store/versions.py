"""Versions: every capture and check of a page is a row of `versions`, with what it found against
the version before (first, same, changed, moved, gone, soft 404, blocked, failed); `pages` keeps
the latest good copy and, in `health`, what the latest check found."""

from __future__ import annotations

import functools
import time
from datetime import datetime
from typing import TYPE_CHECKING

from .._types import Exchange, Extraction, PageResult, PageStatus, Reason, Render, Source, VersionState
from .._util.similar import changed_fraction, same_text, text_hash
from ._sql import _insert_many
from .queries import warc_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["DEAD_AFTER", "Before", "VersionWrites", "bad_answer", "version_state"]

DEAD_AFTER = 24 * 3600.0  # seconds: a host dead on two checks this far apart has taken its pages with it
_GONE_STATUSES = frozenset({404, 410})


class Before:
    """What the page was before this capture: its saved copy's text and address, and its latest versions."""

    def __init__(self, db: sqlite_utils.Database, url: str, had_capture: bool):
        row = db.execute("select final_url, warc_file, warc_offset, status, capture, render_basis from pages where url = ?",
                         [url]).fetchone() if had_capture else None
        self.db, self.url, self.had_capture = db, url, had_capture
        self.final_url, file, offset, self.status, self.capture, self.render_basis = row if row else (None,) * 6
        saved = db.execute("select max(id) from versions where page_url = ? and warc_file = ? and warc_offset = ?",
                           [url, file, offset]).fetchone() if file else None
        self.saved_version = saved[0] if saved else None  # the version the saved copy is
        alive = db.execute("select max(id) from versions where page_url = ? and error is null", [url]).fetchone()[0]
        # the first of the checks since it last answered that found its host dead (no such name,
        # connection refused: not a resolver that gave no answer, nor an offline machine)
        self.dead_since = db.execute("select min(captured_at) from versions where page_url = ? and id > ? and host_dead = 1",
                                     [url, alive or 0]).fetchone()[0]


    @functools.cached_property
    def text(self) -> str | None:
        """The saved copy's article text (read only when a new text is to be compared with it)."""
        if not self.had_capture:
            return None
        return self.db.execute("select text from pages where url = ?", [self.url]).fetchone()[0]


def bad_answer(result: PageResult, extraction: Extraction | None, before: Before) -> tuple[Reason, str] | None:
    """Why a 200 that was extracted is no new version of an article the page had, but a bad
    answer that must not replace it: no article any more (an emptied page, a maintenance page, an
    image or JSON where the article was), or a redirect to another page with another text."""
    final = result.final
    if not final.ok or final.status == 304 or final.revisit or not before.had_capture or extraction is None:
        return None
    if before.status == PageStatus.ARCHIVED and extraction.status != PageStatus.ARCHIVED:
        return Reason.SOFT_404, "soft 404: the page has no article any more (an empty or maintenance page, or not a page)"
    if final.redirects and before.final_url and not _same_address(final.final_url, before.final_url) \
            and not same_text(before.text, extraction.text):
        return Reason.SOFT_404, f"soft 404: redirected to another page with another text ({final.final_url[:300]})"
    return None


def version_state(result: PageResult, extraction: Extraction | None, before: Before, shell: bool = False) -> tuple[VersionState, float | None, str | None]:
    """What this capture or check found: its state, how much the text changed, and why (for a person).

    `shell`: the saved copy is a browser's render, and this is a plain HTTP answer no render
    improved on: the page's JavaScript shell, never compared with the rendered article. It is
    `same` while the shell's text is the one the render was made from, else `needs_browser`."""
    final = result.final
    if final.ok:
        if not before.had_capture:
            return VersionState.FIRST, None, None
        if final.status == 304 or final.revisit:  # (the HTTP status, or revisit_of, says which)
            return VersionState.SAME, 0.0, None
        if shell:
            if extraction is not None and before.render_basis and text_hash(extraction.text) == before.render_basis:
                return VersionState.SAME, 0.0, "the page's shell is unchanged (its saved copy was rendered in a browser)"
            return VersionState.NEEDS_BROWSER, None, ("the saved copy was rendered in a browser; plain HTTP sees only the page's shell, "
                                                      "which changed: check it with the browser")
        text = extraction.text if extraction is not None else None
        changed = changed_fraction(before.text, text)
        if changed == 0.0 or same_text(before.text, text):
            moved = final.redirects and before.final_url and not _same_address(final.final_url, before.final_url)
            if moved:
                return VersionState.MOVED, changed, f"now at {final.final_url[:300]}"
            if changed == 0.0:
                return VersionState.SAME, 0.0, None
        return VersionState.CHANGED, changed, None
    error = final.error
    if error == Reason.SOFT_404:
        return VersionState.SOFT_404, None, final.message
    if error == Reason.BLOCKED:
        return VersionState.BLOCKED, None, final.message
    if final.status in _GONE_STATUSES:
        return VersionState.GONE, None, final.message
    if final.host_dead and before.dead_since and _age(before.dead_since) >= DEAD_AFTER:
        return VersionState.GONE, None, f"{final.message} (the host has been dead since {before.dead_since})"
    return VersionState.FAILED, None, final.message


class VersionWrites:
    """The versions part of `RowWriters` (its state is the archive's)."""

    db: sqlite_utils.Database

    def _record_version(self, result: PageResult, extraction: Extraction | None, before: Before, stamp: str, shell: bool = False) -> VersionState:
        """One `versions` row for this capture or check (the render's, when its article won), and the page's `health`."""
        state, changed, note = version_state(result, extraction, before, shell)
        final: Exchange = result.final
        render = result.render if result.render is not None and result.render.won else None
        how = "browser" if render else Source.WAYBACK if result.source == Source.WAYBACK else Source.LIVE
        self._add_version(result.url, stamp, how, state, extraction, {
            "http_status": render.status if render else final.status,
            "final_url": render.final_url if render else final.final_url,
            "error": None if final.ok else final.error,
            "note": note,
            "changed": changed,
            **warc_values(render.dom if render else final.location),
            # a revisit or a 304 repeats the saved copy: its snapshot and its text are that version's
            "revisit_of": before.saved_version if final.revisit or final.status == 304 else None,
            "host_dead": 1 if final.host_dead else None,
        })
        return state

    def _record_render_version(self, url: str, render: Render, stamp: str) -> None:
        """A render of the saved HTTP capture whose article became the page's: a version of its own
        (`how` browser). It is that capture read better, not a new look at the page: it repeats the
        state of the version it was made from (a page fetched once is `first`, not `changed`)."""
        before = Before(self.db, url, True)
        made_from = self.db.execute("select state from versions where id = ?", [before.saved_version]).fetchone() if before.saved_version else None
        changed = changed_fraction(before.text, render.article.text) if before.text is not None else None
        if made_from and made_from[0] in (VersionState.FIRST, VersionState.CHANGED):
            state = VersionState(made_from[0])
        else:
            state = VersionState.FIRST if before.text is None else VersionState.SAME if changed == 0 else VersionState.CHANGED
        self._add_version(url, stamp, "browser", state, render.article, {
            "http_status": render.status, "final_url": render.final_url, "changed": None if state == VersionState.FIRST else changed,
            **warc_values(render.dom),
        })

    def _add_version(self, url: str, stamp: str, how: str, state: VersionState, extraction: Extraction | None, more: dict) -> None:
        """One `versions` row, and the page's `health` (since when it has been so)."""
        row = {
            "page_url": url, "captured_at": stamp, "how": how, "state": state,
            "text_hash": text_hash(extraction.text) if extraction is not None else None,
            "word_count": extraction.word_count if extraction is not None else None,
            "title": extraction.title if extraction is not None else None,
            **more,
        }
        if row.get("final_url") == url:
            row["final_url"] = None  # (null: the page's own URL)
        _insert_many(self.db, "versions", [row])
        since = "case when health = ? then coalesce(health_since, ?) else ? end"
        self.db.execute(f"update pages set health = ?, health_since = {since} where url = ?", [state, state, stamp, stamp, url])


def _same_address(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _age(stamp: str) -> float:
    try:
        return time.time() - datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0
