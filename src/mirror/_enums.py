"""The words the stages write in: statuses, reasons and kinds, as enums whose values are the
strings stored in the database (a `StrEnum` compares and serializes as its string).

Apart from the values (`_types`, which exports these too) so that what reads the archive
(`mirror search`, the datasette plugin) loads no dataclass: making them takes 9 ms at each start.
The bottom of the package: it imports nothing of mirror's.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "ADDED_SEED",
    "COMMAND_LINE",
    "RETRYABLE_REASONS",
    "RETRY_STATUSES",
    "BrowserMode",
    "CaptureKind",
    "Outcome",
    "PageStatus",
    "Reason",
    "RenderError",
    "ResourceStatus",
    "Source",
    "VersionState",
    "http_error",
]


class PageStatus(StrEnum):
    """`pages.status`."""

    PENDING = "pending"  # in the inventory, not fetched yet
    ARCHIVED = "archived"  # captured, with an article to read
    NO_TEXT = "no_text"  # captured, no article in it
    FAILED = "failed"  # never captured; `error` says why
    SKIPPED = "skipped"  # not a URL mirror fetches; `error` says why
    DUPLICATE = "duplicate"  # captured, the same article as the page `same_as` (one final or canonical URL)


class ResourceStatus(StrEnum):
    """`resources.status`."""

    ARCHIVED = "archived"
    FAILED = "failed"


class Reason(StrEnum):
    """Why a page or resource has no capture (`pages.error`, `resources.error`).

    HTTP errors are `http_<status>` (see `http_error`); `relative`, `scheme` and
    `malformed` are links mirror does not fetch (`skipped` pages).
    """

    DNS = "dns"
    CONNECT = "connect"
    TIMEOUT = "timeout"
    TLS = "tls"
    RESET = "reset"
    PROTOCOL = "protocol"
    PROXY = "proxy"
    SCHEME = "scheme"
    HTTP_ERROR = "http_error"
    TOO_LARGE = "too_large"
    BLOCKED = "blocked"
    SOFT_404 = "soft_404"  # a 200 that is an error page, a redirect to the front page, a parked domain, a "deleted" notice
    NEEDS_BROWSER = "needs_browser"  # a check over plain HTTP of a page whose saved copy the browser rendered: its shell
    BAD_URL = "bad_url"
    REDIRECT_SCHEME = "redirect_scheme"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    PRIVATE_ADDRESS = "private_address"
    TOO_MANY = "too_many"  # a page's images past the number fetched for one page
    DEFERRED = "deferred"  # a resource whose host name had no answer when the run ended: never recorded, asked again
    INTERNAL = "internal"
    RELATIVE = "relative"
    MALFORMED = "malformed"


def http_error(status: int) -> str:
    """The `error` of an HTTP error answer: `http_404`, `http_503`, ..."""
    return f"http_{status}"


class RenderError(StrEnum):
    """`pages.render_error`: why a render did not give the page its article."""

    TIMEOUT = "render_timeout"  # never settled: captured as it was at the bound
    FAILED = "render_failed"  # navigation refused (a download, a network error)
    HUNG = "render_hung"  # the page stopped the browser answering; it was restarted
    CRASH = "browser_crash"  # the browser died (maybe restarted for another tab's hang)
    MEMORY = "render_memory"  # the browser passed its memory bound during the page; it was stopped
    BLOCKED = Reason.BLOCKED.value  # still a challenge after rendering


class Outcome(StrEnum):
    """What one `mirror fetch` run did to a page: the run summary's counts."""

    ARCHIVED = PageStatus.ARCHIVED.value
    NO_TEXT = PageStatus.NO_TEXT.value
    UNCHANGED = "unchanged"  # a conditional request said 304
    FAILED = PageStatus.FAILED.value
    GONE = "gone"  # failed now, but an earlier capture is kept
    DUPLICATE = PageStatus.DUPLICATE.value  # archived before under another link
    LEFT_PENDING = "left pending"  # never really tried: the machine was offline (the next run tries it)


class VersionState(StrEnum):
    """`versions.state` (and `pages.health`, the latest): what one capture or check of a page
    found, against the version before it."""

    FIRST = "first"  # the first capture
    SAME = "same"  # the article's text is unchanged (or the server said 304)
    CHANGED = "changed"  # the article's text changed (`versions.changed` says how much)
    MOVED = "moved"  # a redirect to another URL that serves the same article
    GONE = "gone"  # 404 or 410, or the host dead on checks at least a day apart
    SOFT_404 = Reason.SOFT_404.value  # a 200 that is no article (`versions.note` says why)
    BLOCKED = Reason.BLOCKED.value  # an anti-bot or login page
    NEEDS_BROWSER = Reason.NEEDS_BROWSER.value  # a browser capture checked without a browser: plain HTTP sees its shell, which changed
    FAILED = "failed"  # could not tell (a timeout, a server error, a host down once): the next check asks again


class CaptureKind(StrEnum):
    """`pages.capture`: which capture the article was extracted from."""

    HTTP = "http"
    BROWSER = "browser"


class BrowserMode(StrEnum):
    """Which pages `mirror fetch` renders in chromium."""

    AUTO = "auto"  # pages without text, app shells and JavaScript challenges
    ALWAYS = "always"  # every HTML page
    NEVER = "never"


class Source(StrEnum):
    """`pages.source`: where the saved copy came from."""

    LIVE = "live"
    WAYBACK = "wayback"
    ADDED = "added"  # saved by the user's browser and added (`mirror add`, an upload): what the file says, not fetched


COMMAND_LINE = "(command line)"  # `links.seed` of URLs given on the command line
ADDED_SEED = "(added)"  # `links.seed` of pages the user added (`mirror add`, an upload); kept like the command line's

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 507, 509, 520, 521, 522, 523, 524})
RETRYABLE_REASONS = frozenset({Reason.TIMEOUT, Reason.CONNECT, Reason.RESET, Reason.PROTOCOL, Reason.DNS})
