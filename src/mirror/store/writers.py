"""Writes: each page's fetch, extraction, render and resources, each in one transaction.

`RowWriters` is every write of an `Archive`: the inventory's (`inventory`) and the duplicate
bookkeeping (`identity`) are mixed in from their own modules; the captures' writes are here.
Hot paths use plain SQL (`_sql`): sqlite-utils' update() and upsert() inspect the table
on every call (milliseconds per row at fetch speed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .. import _fts
from .._types import CaptureKind, Exchange, Extraction, PageResult, PageStatus, Reason, Render, ResourceStatus, VersionState
from .._util.faults import crash_point
from ..check.versions import Before, bad_answer
from ._sql import _insert_many, _update_page
from .folder import now
from .forget import ForgetWrites
from .identity import DuplicateWrites
from .inventory import InventoryStats, InventoryWrites
from .queries import warc_values
from .schema import reindex_rows, stored_extraction
from .versions import VersionWrites

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["DEFERRED_BACKOFF", "InventoryStats", "RowWriters"]

# seconds a deferred resource waits before a run asks for it again, by how many times it was
# deferred: a rerun right after a run is not slowed by the same unanswered names
DEFERRED_BACKOFF = (600, 3600, 6 * 3600, 24 * 3600)


class RowWriters(InventoryWrites, DuplicateWrites, VersionWrites, ForgetWrites):
    """The writes of an `Archive` (mixed into it)."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    def record_fetch(self, result: PageResult, *, had_capture: bool, extraction: Extraction | None = None) -> PageStatus | None:
        """One page's outcome, its attempts, its article and its render (`result.render`), in one
        transaction. Returns the status it now has when the capture set it: DUPLICATE for an article
        archived before under another link (same final URL, or same canonical URL and title), kept
        once in the search index and the reading home. Every capture or check is a version too
        (`result.version` says what it found); an unchanged one leaves the saved copy as it was.
        A render whose article won is the page's capture (`capture` browser, the DOM its record)."""
        stamp = now()
        final, render = result.final, result.render
        won_render = render if render is not None and render.won else None  # the browser's article is the page's
        won = won_render is not None
        if won_render is not None:
            extraction = won_render.article
        status: PageStatus | None = None
        original = None
        with self.db.atomic():
            was = self._status(result.url)
            before = Before(self.db, result.url, had_capture)
            shell = not won and before.capture == CaptureKind.BROWSER and not (render is not None and render.http_better)
            if not shell and (bad := bad_answer(result, extraction, before)) is not None:  # it never replaces the saved article
                (final.error, final.message), extraction = bad, None
            result.version = self._record_version(result, extraction, before, stamp, shell=shell)
            # an unchanged page's one request is its version row: a weekly check of 10,000 pages adds little
            self._record_attempts(result, rows=not (result.version == VersionState.SAME and len(result.attempts) == 1))
            update: dict[str, object] = {"checked_at": stamp}
            first_render = won and before.capture != CaptureKind.BROWSER  # (its article is the render's from now on, same or not)
            if final.ok and result.version in (VersionState.SAME, VersionState.NEEDS_BROWSER) and not first_render:  # the saved copy stays
                update |= {"error": None, "error_message": None, "gone_since": None}
                if final.status != 304:  # the validators the server gives now, for the next conditional request
                    update |= {"etag": final.etag, "last_modified": final.last_modified}
                extraction = None
            elif final.ok:
                final_url = won_render.final_url if won_render is not None else final.final_url
                status, original = self._identify(result.url, final_url, extraction.status if extraction else PageStatus.ARCHIVED, extraction)
                update |= _capture_values(result, stamp, status, original, extraction)
            else:
                update |= self._failure_values(result, stamp, had_capture=had_capture)
            if render is not None:
                update |= _render_values(render, stamp)
            _update_page(self.db, result.url, update)
            settled = update.get("final_url")
            self._settle(result.url, settled if isinstance(settled, str) and settled else final.final_url, was, status, original, extraction)
            if extraction is not None:
                self._save_extraction(result.url, extraction, index=original is None)
                if final.ok and final.status != 304:  # what the page's snapshot needs, fetched after: a stop resumes it
                    _update_page(self.db, result.url, {"stylesheets": json.dumps(extraction.stylesheets) if extraction.stylesheets else None})
            crash_point("commit")
        return status

    def record_added(
        self, result: PageResult, extraction: Extraction, provenance: str, resources: list[Exchange], saved_at: str | None, *, had_capture: bool
    ) -> PageStatus | None:
        """A page the user's browser saved, recorded as a fetch of it is (`record_fetch`: a version,
        its article indexed, a file without an article never replacing a saved copy), with where
        it came from (`provenance`, JSON) and the resources it carried, in one transaction."""
        with self.db.atomic():
            status = self.record_fetch(result, had_capture=had_capture, extraction=extraction)
            location = self.db.execute("select warc_file, warc_offset from pages where url = ?", [result.url]).fetchone()
            if result.final.location is not None and tuple(location) == (result.final.location.file, result.final.location.offset):
                _update_page(self.db, result.url, {"provenance": provenance, **({"fetched_at": saved_at} if saved_at else {})})
                self.record_resources(result.url, resources)
        return status

    def _record_attempts(self, result: PageResult, *, rows: bool = True) -> None:
        """The page's requests of this run, one `attempts` row each (unless not `rows`), and their count on the page."""
        if rows:
            self._attempt_rows(result)
        self.db.execute("update pages set attempts = coalesce(attempts, 0) + ? where url = ?", [len(result.attempts), result.url])

    def _attempt_rows(self, result: PageResult) -> None:
        _insert_many(
            self.db,
            "attempts",
            [
                {
                    "url": result.url,
                    "request_url": a.url,
                    "final_url": a.final_url,
                    "started_at": datetime.fromtimestamp(a.started_at, UTC).isoformat(timespec="milliseconds"),
                    "elapsed_ms": int(a.elapsed * 1000),
                    "http_status": a.status,
                    "error": a.error,
                    "error_message": a.message,
                    **warc_values(a.location),
                }
                for a in result.attempts
            ],
        )

    def _failure_values(self, result: PageResult, stamp: str, *, had_capture: bool) -> dict[str, object]:
        """The page's columns after a fetch that failed: a page captured before keeps its copy
        (its status too), and when the copy went away is noted."""
        final = result.final
        values: dict[str, object] = {"error": final.error, "error_message": final.message}
        if had_capture:  # keep the saved copy; note when it went away
            self.db.execute("update pages set gone_since = coalesce(gone_since, ?) where url = ?", [stamp, result.url])
        else:
            values |= {"status": PageStatus.FAILED, "http_status": final.status, "final_url": final.final_url}
        return values

    def save_extraction(self, url: str, extraction: Extraction) -> None:
        """Store a (re-)extraction of a captured page and re-index it."""
        self.save_extractions([(url, extraction)])

    def save_extractions(self, items: Iterable[tuple[str, Extraction]]) -> int:
        """Many re-extractions in one transaction. An article that now shows an image no
        page has archived gets its images fetched again by the next `mirror fetch`
        (`resources_at` cleared). Returns how many such pages there are."""
        images_due = 0
        with self.db.atomic():
            for url, extraction in items:
                duplicate = extraction.status == PageStatus.ARCHIVED and self._duplicate(url)
                if self._status(url) == PageStatus.ARCHIVED and extraction.status != PageStatus.ARCHIVED:
                    self._release(url)
                changed = {} if duplicate else {"same_as": None}  # (a duplicate no more: its original is gone)
                _update_page(self.db, url, {"status": PageStatus.DUPLICATE if duplicate else extraction.status, **changed})
                self._save_extraction(url, extraction, index=not duplicate)
                if duplicate:
                    continue
                if extraction.status == PageStatus.ARCHIVED and self._images_missing(url, extraction.images):
                    _update_page(self.db, url, {"resources_at": None})
                    images_due += 1
        return images_due

    def _images_missing(self, page_url: str, images: list[str] | None) -> bool:
        """Whether the article shows an image never asked for: archived by no page, and not
        tried for this one (one that failed for good, a 404, is not asked for again)."""
        known = "select 1 from resources where url = ? and (status = ? or page_url = ?) limit 1"
        return any(self.db.execute(known, [image, ResourceStatus.ARCHIVED, page_url]).fetchone() is None for image in images or ())

    def _save_extraction(self, url: str, extraction: Extraction, *, index: bool = True) -> None:
        row = extraction.as_row()
        old = next(self.db.query(f"select id, {', '.join(_fts.FTS_COLUMNS)} from pages where url = ?", [url]))
        # out of the index with the values it went in with, before the row changes
        made_from = tuple(row[column] for column in _fts.FTS_COLUMNS)
        values = extraction.search_index if extraction.indexed_from == made_from else None  # else made here, from the row
        _fts.index_page(self.db, old["id"], old, row if extraction.status == PageStatus.ARCHIVED and index else None, values)
        _update_page(self.db, url, {**stored_extraction(row), "extracted_at": now()})

    def rebuild_index(self) -> int:
        """Re-create the search index from the pages table; returns pages indexed."""
        with self.db.atomic():
            self.db.execute(f"drop table if exists {_fts.FTS_TABLE}")
            _fts.ensure_index(self.db)
            return reindex_rows(self.db)

    def complete_index(self) -> int:
        """After a re-extraction, which indexed every page it saved: the index holds exactly
        the archived pages, the pages it lacks indexed from their rows (not all of them again,
        as `rebuild_index` would). Returns how many pages the index holds."""
        with self.db.atomic():
            stale = self.db.execute(
                f"select id from {_fts.INDEXED} where id not in (select id from pages where status = ? and text is not null)",
                [PageStatus.ARCHIVED],
            ).fetchall()
            for (page_id,) in stale:
                _fts.unindex_page(self.db, page_id)
            reindex_rows(self.db, missing_only=True)
            indexed: int = self.db.execute(f"select count(*) from {_fts.INDEXED}").fetchone()[0]
            return indexed

    def record_render(self, url: str, render: Render) -> PageStatus | None:
        """A browser's render of a page's saved HTTP capture (one a run without a browser made): its
        outcome, and its article when it won, in one transaction. Returns the status the page now
        has when the article won: DUPLICATE for one archived before under another link, as
        `record_fetch` decides. A render the crash of the browser took down is not `done`: the page
        is rendered again on the next run."""
        status, original = None, None
        stamp = now()
        with self.db.atomic():
            was = self._status(url)
            update = _render_values(render, stamp)
            if (article := render.article) is not None:
                self._record_render_version(url, render, article, stamp)
                status, original = self._identify(url, render.final_url, article.status, article)
                update |= _browser_values(render) | {
                    "status": status,
                    "same_as": original,
                    "canonical": article.canonical,
                    "error": None,
                    "error_message": None,
                    "fetched_at": stamp,
                }
            _update_page(self.db, url, update)
            self._settle(url, render.final_url, was, status, original, render.article)
            if render.article is not None:
                self._save_extraction(url, render.article, index=original is None)
            crash_point("render_commit")
        return status

    def record_resources(self, page_url: str, exchanges: list[Exchange], *, done: bool = True) -> int:
        """A page's resources and (`done`) that they are all asked for, in one transaction (plain
        SQL: sqlite-utils' upsert inspects the table on every call, milliseconds per image).
        A deferred one (its host name had no answer when the run ended) is a failed row with
        `retry_at`: a run asks for it again once that time has come (`pages_missing_images`), each
        deferral waiting longer (`DEFERRED_BACKOFF`); deferred that many times it is failed for
        good. Returns how many were deferred."""
        stamp = now()
        rows = []
        deferred = 0
        for exchange in exchanges:
            row = {
                "page_url": page_url,
                "url": exchange.url,
                "status": ResourceStatus.ARCHIVED if exchange.ok else ResourceStatus.FAILED,
                "http_status": exchange.status,
                "content_type": exchange.content_type,
                "error": exchange.error,
                "error_message": exchange.message,
                **warc_values(exchange.location if exchange.ok else None),
                "fetched_at": stamp,
                "tries": None,
                "retry_at": None,
            }
            if exchange.error == Reason.DEFERRED:
                row |= self._deferral(page_url, exchange, stamp)
                deferred += row["retry_at"] is not None
            rows.append(row)
        with self.db.atomic():
            _insert_many(self.db, "resources", rows, verb="insert or replace")
            if done:
                _update_page(self.db, page_url, {"resources_at": stamp})
        return deferred

    def defer_resources(self, resources: list[tuple[str, str]]) -> int:
        """Resources (page, url) recorded failed on a lookup or a route in a run that then found the
        network down: deferred instead (the machine's state, not their hosts'). Returns how many."""
        stamp, deferred = now(), 0
        with self.db.atomic():
            for page_url, url in resources:
                row = self.db.execute(
                    "select error_message from resources where page_url = ? and url = ? and status = ?", [page_url, url, ResourceStatus.FAILED]
                ).fetchone()
                if row is None:
                    continue
                values = self._deferral(page_url, Exchange(url=url, final_url=url, error=Reason.DEFERRED, message=row[0]), stamp)
                values.setdefault("error", Reason.DEFERRED)
                sets = ", ".join(f"{column} = ?" for column in values)
                self.db.execute(f"update resources set {sets} where page_url = ? and url = ?", [*values.values(), page_url, url])
                deferred += values.get("retry_at") is not None
        return deferred

    def _deferral(self, page_url: str, exchange: Exchange, stamp: str) -> dict[str, object]:
        """A deferred resource's row: asked again after a backoff that grows with each deferral,
        or, deferred DEFERRED_BACKOFF's length of times, failed for good (`--refresh` asks again)."""
        before = self.db.execute("select tries from resources where page_url = ? and url = ?", [page_url, exchange.url]).fetchone()
        tries = (before[0] or 0) + 1 if before else 1
        if tries > len(DEFERRED_BACKOFF):
            message = f"its host name had no answer in {tries} runs; not asked again (--refresh asks again)"
            return {"error": Reason.DNS, "error_message": message, "tries": tries}
        when = datetime.fromisoformat(stamp) + timedelta(seconds=DEFERRED_BACKOFF[tries - 1])
        return {"tries": tries, "retry_at": when.isoformat(timespec="seconds"), "error_message": exchange.message}

    def reset_pending(self, urls: list[str]) -> list[str]:
        """Pages a run marked failed for a name that did not resolve, or no route, while the
        network was down: pending again (they were never really tried; a check does not count
        as their check either). Returns those it reset."""
        reset = []
        with self.db.atomic():
            for url in urls:
                cursor = self.db.execute(
                    "update pages set status = ?, error = null, error_message = null, checked_at = null, health = null, health_since = null "
                    "where url = ? and status = ? and error in (?, ?)",
                    [PageStatus.PENDING, url, PageStatus.FAILED, Reason.DNS, Reason.CONNECT],
                )
                if cursor.rowcount:
                    reset.append(url)
        return reset

    def dead_names(self) -> dict[str, float]:
        """Host names an earlier run found not to exist, until when to believe it (time.time())."""
        rows = self.db.execute("select name, until from dead_names where until > ?", [time.time()]).fetchall()
        return dict(rows)

    def record_dead_names(self, names: dict[str, float]) -> None:
        if names:
            with self.db.atomic():
                _insert_many(self.db, "dead_names", [{"name": n, "until": u} for n, u in names.items()], verb="insert or replace")


def _capture_values(result: PageResult, stamp: str, status: PageStatus, original: str | None, extraction: Extraction | None) -> dict[str, object]:
    """The page's columns after a fetch that captured it (a 304 aside): what the response says,
    where it is in the WARC files (the rendered DOM's, when the browser's article won), and the
    status `_identify` gave it."""
    final = result.final
    browser = _browser_values(result.render) if result.render is not None and result.render.won else {}
    return {
        "status": status,
        "same_as": original,
        "canonical": extraction.canonical if extraction else None,
        "http_status": final.status,
        "final_url": final.final_url,
        "content_type": final.content_type,
        "fetched_at": stamp,
        "etag": final.etag,
        "last_modified": final.last_modified,
        "redirects": json.dumps(final.redirects) if final.redirects else None,
        **warc_values(final.location),
        "source": result.source,
        "provenance": None,  # (an added page's, set by `record_added`: a fetched copy has none)
        "capture": CaptureKind.HTTP,
        "wayback_timestamp": result.wayback_timestamp,
        "error": None,
        "error_message": None,
        "gone_since": None,
        **browser,
    }


def _browser_values(render: Render) -> dict[str, object]:
    """The capture columns of a page whose article is its render's: the DOM is its record."""
    return {
        "capture": CaptureKind.BROWSER,
        "http_status": render.status,
        "final_url": render.final_url,
        "content_type": "text/html; charset=utf-8",
        **warc_values(render.dom),
    }


def _render_values(render: Render, stamp: str) -> dict[str, object]:
    """The render columns: when, how it ended, its screenshots, and whether it improved on the HTTP capture."""
    values: dict[str, object] = {
        "rendered_at": stamp if render.done else None,
        "render_error": render.error,
        "render_note": render.note,
        "render_gain": None if render.error is not None and not render.won else int(render.won),
        "render_basis": render.basis,
    }
    if render.screenshot is not None:
        full = warc_values(render.full_screenshot, "full_screenshot_")  # in the first screen's file: no file column of its own
        values |= warc_values(render.screenshot, "screenshot_") | {k: v for k, v in full.items() if not k.endswith("_file")}
    return values
