"""Versions: every capture and check of a page is a row of `versions`, with what it found against
the version before (judged by `check.versions`); `pages` keeps the latest good copy and, in
`health`, what the latest check found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._types import Exchange, Extraction, PageResult, Render, Source, VersionState
from .._util.similar import changed_fraction, text_hash
from ..check.versions import Before, version_state
from ._sql import _insert_many
from .queries import warc_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["VersionWrites"]


class VersionWrites:
    """The versions part of `RowWriters` (its state is the archive's)."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    def _record_version(self, result: PageResult, extraction: Extraction | None, before: Before, stamp: str, shell: bool = False) -> VersionState:
        """One `versions` row for this capture or check (the render's, when its article won), and the page's `health`."""
        state, changed, note = version_state(result, extraction, before, shell)
        final: Exchange = result.final
        render = result.render if result.render is not None and result.render.won else None
        how = "browser" if render else Source(result.source)  # live, wayback, or added by the user
        self._add_version(
            result.url,
            stamp,
            how,
            state,
            extraction,
            {
                "http_status": render.status if render else final.status,
                "final_url": render.final_url if render else final.final_url,
                "error": None if final.ok else final.error,
                "note": note,
                "changed": changed,
                **warc_values(render.dom if render else final.location),
                # a revisit or a 304 repeats the saved copy: its snapshot and its text are that version's
                "revisit_of": before.saved_version if final.revisit or final.status == 304 else None,
                "host_dead": 1 if final.host_dead else None,
            },
        )
        return state

    def _record_render_version(self, url: str, render: Render, article: Extraction, stamp: str) -> None:
        """A render of the saved HTTP capture whose article became the page's: a version of its own
        (`how` browser). It is that capture read better, not a new look at the page: it repeats the
        state of the version it was made from (a page fetched once is `first`, not `changed`)."""
        before = Before(self.db, url, True)
        made_from = self.db.execute("select state from versions where id = ?", [before.saved_version]).fetchone() if before.saved_version else None
        changed = changed_fraction(before.text, article.text) if before.text is not None else None
        if made_from and made_from[0] in (VersionState.FIRST, VersionState.CHANGED):
            state = VersionState(made_from[0])
        else:
            state = VersionState.FIRST if before.text is None else VersionState.SAME if changed == 0 else VersionState.CHANGED
        self._add_version(
            url,
            stamp,
            "browser",
            state,
            article,
            {
                "http_status": render.status,
                "final_url": render.final_url,
                "changed": None if state == VersionState.FIRST else changed,
                **warc_values(render.dom),
            },
        )

    def _add_version(self, url: str, stamp: str, how: str, state: VersionState, extraction: Extraction | None, more: dict[str, object]) -> None:
        """One `versions` row, and the page's `health` (since when it has been so)."""
        row = {
            "page_url": url,
            "captured_at": stamp,
            "how": how,
            "state": state,
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
