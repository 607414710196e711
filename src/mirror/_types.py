"""The values that pass between the stages, and the words they are written in (`_enums`, exported
here too).

The bottom of the package: it imports nothing of mirror's but `_enums`, so every stage
(seeds -> fetch/warc -> extract -> store -> search -> plugin/cli) can use it
without knowing about the others. Enum values are the strings stored in the
database; a `StrEnum` compares and serializes as its string.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from ._enums import (
    ADDED_SEED,
    COMMAND_LINE,
    RETRY_STATUSES,
    RETRYABLE_REASONS,
    BrowserMode,
    CaptureKind,
    Outcome,
    PageStatus,
    Reason,
    RenderError,
    ResourceStatus,
    Source,
    VersionState,
    http_error,
)

__all__ = [
    "ADDED_SEED",
    "COMMAND_LINE",
    "BrowserMode",
    "CaptureKind",
    "CapturedPage",
    "Exchange",
    "Extraction",
    "Link",
    "Outcome",
    "PageResources",
    "PageResult",
    "PageStatus",
    "PageToFetch",
    "Reason",
    "Render",
    "RenderError",
    "ResourceStatus",
    "Source",
    "VersionState",
    "WarcLocation",
    "http_error",
]


@dataclass(frozen=True)
class Link:
    """One occurrence of a link in a seed document."""

    url: str  # normalized: the identity of the page
    url_as_written: str
    seed: str
    line: int
    col: int  # 1-based character column, so that two links on one line stay distinct
    title: str | None = None
    section: str | None = None
    skip_reason: str | None = None
    candidates: tuple[str, ...] = ()  # glued-URL repairs, tried after a 404
    tags: str | None = None  # comma-separated, from a bookmark service's export
    added: str | None = None  # when it was saved there (ISO)


@dataclass(frozen=True)
class WarcLocation:
    """Where a response record lives: file name relative to archive/warc/."""

    file: str
    offset: int
    length: int


class CapturedPage(NamedTuple):
    """A page with a saved copy, as re-extraction reads it (`Archive.captured_pages`)."""

    url: str
    final_url: str  # the saved copy's (the last hop of its redirects)
    location: WarcLocation


class PageResources(NamedTuple):
    """An archived article's images and stylesheets a run fetches after it (`Archive.pages_missing_images`,
    `Archive.failed_resources_of`)."""

    url: str
    final_url: str  # what the resources' relative URLs are resolved against
    images: list[str]
    stylesheets: list[str]


@dataclass(frozen=True)
class PageToFetch:
    """A page the store hands to the fetcher."""

    url: str
    candidates: tuple[str, ...] = ()
    has_capture: bool = False  # a saved copy exists: a failure now keeps it (and sets gone_since)
    etag: str | None = None
    last_modified: str | None = None
    capture: WarcLocation | None = None  # the saved copy's response record: a re-check that gets its bytes again is a revisit
    final_url: str | None = None  # the saved copy's URL (the last hop of its redirects)
    captured_by: CaptureKind | None = None  # which capture the saved article came from (a browser's is checked with one)
    render_gain: bool | None = None  # whether the last render improved on the HTTP capture (None: never rendered)
    render_basis: str | None = None  # the text hash of the HTTP article that render was compared with


@dataclass
class Exchange:
    """A request and the redirects it led to: one attempt at a URL."""

    url: str
    final_url: str
    status: int | None = None
    error: str | None = None  # a Reason, or http_<status>
    message: str | None = None
    redirects: list[str] = field(default_factory=list)
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    location: WarcLocation | None = None
    retry_after: float | None = None
    redirect_to: str | None = None  # Location of a 3xx hop, before it is followed
    started_at: float = 0.0
    elapsed: float = 0.0
    server_seconds: float = 0.0  # the hops' own time: `elapsed` without our waits at hosts' gates between them
    give_up: bool = False  # retrying cannot help: the host is down for this run, or the URL is bad
    revisit: bool = False  # the payload is the saved copy's, byte for byte: `location` is a revisit record, no body
    host_dead: bool = False  # the host's name does not exist or it refused the connection (not a lookup without answer)
    unreached: bool = False  # never left this machine: its name had no answer, or no route to the network (offline: never really tried)

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None and (200 <= self.status < 300 or self.status == 304)

    @property
    def retryable(self) -> bool:
        if self.give_up:
            return False
        if self.error in RETRYABLE_REASONS:
            return True
        return self.error != Reason.BLOCKED and self.status in RETRY_STATUSES


@dataclass
class Extraction:
    status: PageStatus  # archived (there is text to read) or no_text
    kind: str  # html, pdf, text, other
    title: str | None = None
    author: str | None = None
    date: str | None = None
    sitename: str | None = None
    description: str | None = None
    language: str | None = None
    tags: str | None = None
    text: str | None = None
    markdown: str | None = None
    word_count: int = 0
    images: list[str] = field(default_factory=list)  # absolute URLs the article shows
    # the search index's values for it (`mirror._util.segment.index_values`), made in the
    # extraction worker so that the process writing the database only inserts them
    search_index: tuple[str, ...] | None = None
    # the (title, text, author, sitename) it was made from: the writer uses it only for those
    # (a contentless index takes a page out with the values it went in with; pickled once, shared)
    indexed_from: tuple[str | None, str | None, str | None, str | None] | None = None
    # the stylesheets the page links and the URLs its inline CSS loads, found on the tree
    # extraction parses anyway (when asked for: fetch captures them, not stored here)
    stylesheets: list[str] = field(default_factory=list)
    note: str | None = None  # what went wrong while extracting, for a person (`pages.extract_note`)
    canonical: str | None = None  # the URL the page declares as its own (rel=canonical, og:url), when another

    def as_row(self) -> dict[str, object]:
        row = asdict(self)
        row["images"] = json.dumps(self.images) if self.images else None
        row["extract_note"] = row.pop("note")
        row.pop("canonical")  # written with the capture it came from (`RowWriters.record_fetch`)
        del row["search_index"], row["stylesheets"], row["indexed_from"]
        return row


@dataclass
class Render:
    """What a browser made of a page's capture, as the store records it (`pages.render_*`, `capture`)."""

    final_url: str  # where the page ended (a challenge reloads into the article)
    status: int | None = None  # the main document's HTTP status
    error: RenderError | None = None
    note: str | None = None
    dom: WarcLocation | None = None  # the rendered DOM (a `conversion` record referring to the HTTP capture)
    screenshot: WarcLocation | None = None  # the first screen (PNG)
    full_screenshot: WarcLocation | None = None  # the page, at most 8000 pixels tall
    article: Extraction | None = None  # the render's article when it is better than the HTTP capture's: the page's now
    http_better: bool = False  # the render has an article, and the HTTP capture's is at least as good
    basis: str | None = None  # the text hash of the HTTP article it was compared with
    resources: list[Exchange] = field(default_factory=list)  # images, stylesheets and fonts the browser received
    done: bool = True  # False: the browser crashed under it; the next run renders the page again

    @property
    def won(self) -> bool:
        return self.article is not None


@dataclass
class PageResult:
    """What happened to one page in this run."""

    url: str
    final: Exchange
    attempts: list[Exchange]
    source: Source = Source.LIVE
    wayback_timestamp: str | None = None
    extraction: Extraction | None = None
    version: VersionState | None = None  # what it found against the version before (set when it is recorded)
    render: Render | None = None  # the browser's render of this capture, when it had one

    @property
    def ok(self) -> bool:
        return self.final.ok
