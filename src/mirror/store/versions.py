"""Versions: every capture and check of a page is a row of `versions`, with what it found against
the version before (judged by `check.versions`); `pages` keeps the latest good copy and, in
`health`, what the latest check found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._types import Exchange, Extraction, PageResult, Source, VersionState
from .._util.similar import changed_fraction, text_hash
from ..check.versions import Before, version_state
from ._sql import _insert_many
from .queries import warc_values

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["VersionWrites"]


class VersionWrites:
    """The versions part of `RowWriters` (its state is the archive's)."""

    db: sqlite_utils.Database

    def _record_version(self, result: PageResult, extraction: Extraction | None, before: Before, stamp: str) -> VersionState:
        """One `versions` row for this capture or check, and the page's `health`."""
        state, changed, note = version_state(result, extraction, before)
        final: Exchange = result.final
        self._add_version(result.url, stamp, Source.WAYBACK if result.source == Source.WAYBACK else Source.LIVE, state, extraction, {
            "http_status": final.status,
            "final_url": final.final_url,
            "error": None if final.ok else final.error,
            "note": note,
            "changed": changed,
            **warc_values(final.location),
            # a revisit or a 304 repeats the saved copy: its snapshot and its text are that version's
            "revisit_of": before.saved_version if final.revisit or final.status == 304 else None,
            "host_dead": 1 if final.host_dead else None,
        })
        return state

    def _record_render_version(self, url: str, values: dict[str, object], extraction: Extraction, stamp: str) -> None:
        """A browser capture that became the page's article: a version of its own (`how` browser)."""
        before = Before(self.db, url, True).text
        changed = changed_fraction(before, extraction.text)
        state = VersionState.FIRST if before is None else VersionState.SAME if changed == 0 else VersionState.CHANGED
        self._add_version(url, stamp, "browser", state, extraction, {
            "http_status": values.get("http_status"), "final_url": values.get("final_url"), "changed": changed if before else None,
            **{k: values.get(k) for k in ("warc_file", "warc_offset", "warc_length")},
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
