"""Reads: what the runs ask the store for, and the page lookups the CLI and the plugin share.

Functions take a `sqlite_utils.Database`, so the plugin calls them on datasette's
connection (`db.execute_fn`) and the CLI on an `Archive`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, overload

if TYPE_CHECKING:
    import sqlite_utils

from .._types import CapturedPage, CaptureKind, PageResources, PageStatus, PageToFetch, Reason, ResourceStatus, Source, WarcLocation
from .schema import article_markdown

__all__ = [
    "MissingResources",
    "Row",
    "archived_resource_urls",
    "attempts_of",
    "find_page",
    "latest_resource",
    "origins",
    "page_by_id",
    "warc_location",
    "warc_values",
    "with_markdown",
]


Row = dict[str, Any]  # a database row as sqlite-utils reads it: column -> value


def warc_location(row: Mapping[str, Any], prefix: str = "") -> WarcLocation | None:
    """The capture a row's `warc_file` / `warc_offset` / `warc_length` point at (None: no capture)."""
    file = row[f"{prefix}warc_file"]
    return WarcLocation(file, row[f"{prefix}warc_offset"], row[f"{prefix}warc_length"]) if file else None


def warc_values(location: WarcLocation | None, prefix: str = "") -> dict[str, object]:
    """The three columns that store `location` (all None for no capture)."""
    return {
        f"{prefix}warc_file": location.file if location else None,
        f"{prefix}warc_offset": location.offset if location else None,
        f"{prefix}warc_length": location.length if location else None,
    }


def page_by_id(db: sqlite_utils.Database, page_id: int) -> Row | None:
    return with_markdown(next(db.query("select * from pages where id = ?", [page_id]), None))


@overload
def with_markdown(page: Row) -> Row: ...
@overload
def with_markdown(page: None) -> None: ...
def with_markdown(page: Row | None) -> Row | None:
    """A page row with its article's Markdown (`markdown`) read from the compressed column."""
    if page is not None:
        page["markdown"] = article_markdown(page.pop("markdown_z", None)) if "markdown_z" in page else page.get("markdown")
    return page


def find_page(db: sqlite_utils.Database, key: str, normalized: str | None = None) -> Row | None:
    """A page by its id, its URL (as written or `normalized`) or where it ended up."""
    return with_markdown(
        next(
            db.query(
                "select * from pages where url = ? or url = ? or final_url = ? or id = ? "
                "order by url = ? desc, url = ? desc, id limit 1",  # the URL as given wins, then as normalized
                [key, normalized or key, key, int(key) if key.isdigit() and len(key) < 19 else -1, key, normalized or key],
            ),
            None,
        )
    )


def origins(db: sqlite_utils.Database, url: str) -> list[Row]:
    """The seed lines that link to a page."""
    return list(db.query("select seed, line, section, title, tags from links where url = ? order by seed, line", [url]))


def attempts_of(db: sqlite_utils.Database, url: str) -> list[Row]:
    """A page's request history, newest first."""
    return list(
        db.query(
            "select started_at, request_url, final_url, http_status, error, error_message, elapsed_ms from attempts where url = ? order by id desc",
            [url],
        )
    )


def archived_resource_urls(db: sqlite_utils.Database) -> set[str]:
    return {r["url"] for r in db.query("select distinct url from resources where status = ?", [ResourceStatus.ARCHIVED])}


def latest_resource(db: sqlite_utils.Database, url: str) -> Row | None:
    """The newest archived capture of a resource (image, stylesheet, font) at `url`."""
    return next(
        db.query(
            "select warc_file, warc_offset, warc_length, content_type from resources where url = ? and status = ? order by fetched_at desc limit 1",
            [url, ResourceStatus.ARCHIVED],
        ),
        None,
    )


class MissingResources(NamedTuple):
    """An archived article whose resources a run asks for (`PipelineReads.pages_missing_images`)."""

    url: str
    final_url: str
    images: list[str]
    stylesheets: list[str]
    settled: frozenset[str]  # asked for before for it, fetched or failed (a deferred one due again is not)
    due: int  # deferred ones due again
    unfinished: bool  # its resources were never all asked for (a stopped run, a re-extraction)


class PipelineReads:
    """What the runs ask an `Archive` (mixed into it)."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    def pages_to_fetch(
        self, *, retry_failed: bool = False, refresh: bool = False, only: Iterable[str] | None = None, linked: bool = True
    ) -> list[PageToFetch]:
        """The pages a run fetches: pending ones (failed ones too, or all, with `retry_failed`
        or `refresh`) among `only` (the pages the sources named link), else among the pages some
        reading list still links (`linked`; a link removed from every list is not fetched), else all."""
        if refresh:
            statuses = [s for s in PageStatus if s != PageStatus.SKIPPED]
        elif retry_failed:
            statuses = [PageStatus.PENDING, PageStatus.FAILED]
        else:
            statuses = [PageStatus.PENDING]
        where = f"status in ({', '.join('?' for _ in statuses)})"
        if only is None and linked:
            where += " and exists (select 1 from links where links.url = pages.url)"
        rows = self.db.query(
            f"select url, candidates, warc_file, warc_offset, warc_length, final_url, etag, last_modified, capture, render_gain, "
            f"render_basis from pages where {where} order by first_seen, url",
            statuses,
        )
        if only is not None:  # (a read, not a temporary table: that would open a transaction the run never ends)
            wanted = set(only)
            rows = (row for row in rows if row["url"] in wanted)
        return [
            PageToFetch(
                url=row["url"],
                candidates=tuple(json.loads(row["candidates"] or "[]")),
                has_capture=row["warc_file"] is not None,
                etag=row["etag"],
                last_modified=row["last_modified"],
                capture=warc_location(row),
                final_url=row["final_url"],
                captured_by=CaptureKind(row["capture"]) if row["capture"] else None,
                render_gain=None if row["render_gain"] is None else bool(row["render_gain"]),
                render_basis=row["render_basis"],
            )
            for row in rows
        ]

    def captured_pages(self) -> list[CapturedPage]:
        """Every page with a saved copy."""
        rows = self.db.query("select url, final_url, warc_file, warc_offset, warc_length from pages where warc_file is not null order by url")
        return [CapturedPage(r["url"], r["final_url"] or r["url"], WarcLocation(r["warc_file"], r["warc_offset"], r["warc_length"])) for r in rows]

    def statuses_of(self, urls: list[str]) -> dict[str, int]:
        """How many of these pages have each status."""
        rows = self.db.execute("select status, count(*) from pages where url in (select value from json_each(?)) group by status", [json.dumps(urls)])
        return dict(rows.fetchall())

    def pages_to_render(self, every_html: bool, thin_words: int, only: Iterable[str] | None = None) -> list[Row]:
        """Pages whose latest HTTP capture no browser has rendered (a run without one made it):
        candidates the run judges by the evidence in their capture (`browser.decide`).

        Live captures only (a Wayback copy's page is gone from the web): HTML pages without text or
        with fewer than `thin_words` words (every HTML page with `every_html`), and pages that failed
        as `blocked` (a JavaScript challenge is decided by its reason). Among `only` when given.
        """
        thin = "1" if every_html else "status = :no_text or coalesce(word_count, 0) < :thin_words"
        rows = self.db.query(
            f"""select url, status, final_url, http_status, title, text, word_count, warc_file, warc_offset, warc_length, error,
                       error_message
                from pages where
                  (status in (:archived, :no_text) and kind = 'html' and coalesce(capture, :http) = :http
                   and coalesce(source, :live) = :live
                   and ({thin}) and (rendered_at is null or rendered_at < fetched_at))
                  or (status = :failed and error = :blocked and (rendered_at is null or rendered_at < checked_at))
                order by id""",
            {
                "archived": PageStatus.ARCHIVED,
                "no_text": PageStatus.NO_TEXT,
                "failed": PageStatus.FAILED,
                "http": CaptureKind.HTTP,
                "live": Source.LIVE,
                "blocked": Reason.BLOCKED,
                "thin_words": int(thin_words),
            },
        )
        wanted = None if only is None else set(only)
        return [dict(r) for r in rows if wanted is None or r["url"] in wanted]

    def last_capture(self, url: str) -> WarcLocation | None:
        """The latest response captured for a page's URL (a failed page's too)."""
        row = next(
            self.db.query(
                "select warc_file, warc_offset, warc_length from attempts where url = ? and warc_file is not null order by id desc limit 1",
                [url],
            ),
            None,
        )
        return warc_location(row) if row else None

    def pages_missing_images(self, only: Iterable[str] | None = None, now: str | None = None) -> list[MissingResources]:
        """The archived articles whose images or stylesheets are not all asked for (a stopped run,
        a re-extraction), or that have deferred ones due again (`retry_at` past `now`), among
        `only` when given; each with the resources already settled for it (fetched or failed:
        not asked again) and how many deferred ones are due."""
        from .folder import now as stamp

        now = now or stamp()
        due: dict[str, int] = {}
        for page_url, n in self.db.execute(
            "select page_url, count(*) from resources where retry_at is not null and retry_at <= ? group by page_url", [now]
        ):
            due[page_url] = n
        rows = self.db.query(
            "select url, final_url, images, stylesheets, resources_at from pages where status = ? "
            "and (images is not null or stylesheets is not null) "
            "and (resources_at is null or url in (select value from json_each(?)))",
            [PageStatus.ARCHIVED, json.dumps(list(due))],
        )
        if only is not None:
            wanted = set(only)
            rows = (r for r in rows if r["url"] in wanted)
        missing = []
        for r in rows:
            settled = {
                url
                for (url,) in self.db.execute("select url from resources where page_url = ? and (retry_at is null or retry_at > ?)", [r["url"], now])
            }
            images, stylesheets = json.loads(r["images"] or "[]"), json.loads(r["stylesheets"] or "[]")
            missing.append(
                MissingResources(
                    r["url"], r["final_url"] or r["url"], images, stylesheets, frozenset(settled), due.get(r["url"], 0), r["resources_at"] is None
                )
            )
        return missing

    def failed_resources_of(self, url: str) -> PageResources | None:
        """The resources of an archived article some of which failed (a host that was down, a name
        that did not exist), for a refresh to ask again."""
        if self.db.execute("select 1 from resources where page_url = ? and status = ? limit 1", [url, ResourceStatus.FAILED]).fetchone() is None:
            return None
        row = self.db.execute("select final_url, images, stylesheets from pages where url = ? and status = ?", [url, PageStatus.ARCHIVED]).fetchone()
        return PageResources(url, row[0] or url, json.loads(row[1] or "[]"), json.loads(row[2] or "[]")) if row else None

    def archived_resource_urls(self) -> set[str]:
        return archived_resource_urls(self.db)
