"""What a fetch run is asked to do (`mirror fetch`'s options), and the cookies it sends."""

from __future__ import annotations

import re
import tempfile
import warnings
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, LoadError, MozillaCookieJar
from pathlib import Path

from .. import warc
from ..extract.pool import EXTRACT_TIMEOUT

__all__ = ["DEFAULT_USER_AGENT", "FetchError", "FetchOptions", "load_cookies", "run_cookies"]

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36 mirror/0.1 (personal archiver)"
)


class FetchError(Exception):
    """The run cannot start: the cookies file cannot be read or is not a cookies.txt, or the
    browser's cookies cannot be read.
    (A locked or unusable archive is a `mirror.store.ArchiveError`.)"""


@dataclass
class FetchOptions:
    concurrency: int = 16
    per_host: int = 2
    delay: float = 1.0
    timeout: float = 30.0
    max_bytes: int = 50_000_000
    max_redirects: int = 10
    retries: int = 3
    timeout_retries: int = 1  # of those, after a timeout: a hanging page costs (1 + this) × timeout
    backoff: float = 1.0  # first retry waits about this long, then doubles
    retry_after_cap: float = 120.0
    user_agent: str = DEFAULT_USER_AGENT
    headers: dict[str, str] = field(default_factory=dict)
    cookies: Path | None = None
    cookies_from_browser: str | None = None  # BROWSER[:PROFILE], as yt-dlp spells it (`browser_cookies`)
    cookie_jar: CookieJar | None = None  # that browser's cookies, read already (the command line reads them to say what it read)
    retry_failed: bool = False
    refresh: bool = False
    check: bool = False  # a link-health check: soft 404s are also judged against the host's answer for a path that cannot exist
    wayback: bool = False
    wayback_api: str = "https://archive.org"
    warc_rotate_bytes: int = warc.DEFAULT_ROTATE_BYTES
    images: bool = True  # fetch the images an extracted article shows
    workers: int | None = None  # extraction processes (default: one per core)
    browser: str = "never"  # auto, always or never: see mirror.browser (the CLI defaults to auto)
    chromium: str | None = None  # default: MIRROR_CHROMIUM, else chromium on the PATH
    browser_tabs: int | None = None  # pages rendered at once (default: `browser.default_tabs()`)
    allow_private: bool = False  # resources may come from private/loopback addresses whatever the page's
    page_reach: int | None = None  # a `Reach`: pages no more private than this (a feed's entries: than the feed); None: as listed
    header_all_hosts: bool = False  # send `headers` everywhere, not only to the seed URLs' hosts
    resource_retries: int = 1  # images get their own, smaller budget: they never hold up a page
    resource_timeout: float = 10.0
    resource_concurrency: int | None = None  # default: the same as `concurrency`, in slots of their own
    extract_timeout: float = EXTRACT_TIMEOUT  # seconds for a page's extraction; past it, its plain text
    tail_grace: float = 1.5  # seconds the resources get once every page is recorded, before unanswered lookups are deferred

    def warcinfo(self) -> dict[str, str]:
        """The fields of the warcinfo record each WARC file of the run opens with: what wrote it and
        how the run was asked to fetch. Never a header's value or a cookie (a token, a session):
        only the names of the headers sent and whether a cookies file was given."""
        settings = {
            "concurrency": self.concurrency,
            "per-host": self.per_host,
            "delay": self.delay,
            "timeout": self.timeout,
            "max-bytes": self.max_bytes,
            "max-redirects": self.max_redirects,
            "retries": self.retries,
            "browser": self.browser,
            "images": self.images,
            "allow-private": self.allow_private,
            "wayback": self.wayback,
            "refresh": self.refresh,
            "check": self.check,
        }
        info = {
            "software": warc.software(),
            "format": "WARC File Format 1.0",
            "conformsTo": "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf",
            "description": "mirror link-health check" if self.check else "mirror fetch of reading lists",
            "http-header-user-agent": self.user_agent,
            "mirror-settings": " ".join(f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in settings.items()),
        }
        if self.headers:
            info["mirror-headers-sent"] = ", ".join(sorted(self.headers)) + " (values not recorded)"
        if self.cookies:
            info["mirror-cookies"] = "a cookies file (not recorded)"
        return info


def load_cookies(path: Path) -> MozillaCookieJar:
    """A Netscape cookies.txt as browser extensions export it (header line optional)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FetchError(f"{path}: cannot read cookies file ({exc.strerror})") from exc
    if not re.match(r"#( Netscape)? HTTP Cookie File", text):
        text = "# Netscape HTTP Cookie File\n" + text
    jar = MozillaCookieJar()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=True) as tmp:
        tmp.write(text)
        tmp.flush()
        try:
            with warnings.catch_warnings():  # cookiejar warns before raising on bad lines
                warnings.simplefilter("ignore")
                jar.load(tmp.name, ignore_discard=True, ignore_expires=True)
        except (LoadError, OSError, ValueError) as exc:
            detail = str(exc).replace(tmp.name, str(path))  # the user's file, not our copy of it
            raise FetchError(f"{path}: not a Netscape cookies.txt file ({detail})") from exc
    for cookie in jar:
        if not cookie.expires:  # exporters write 0 for session cookies
            cookie.expires, cookie.discard = None, True
    return jar


def run_cookies(options: FetchOptions) -> CookieJar | None:
    """The cookies a run sends: the cookies.txt's and the browser's, in one jar (each cookie
    still only to its own domain). Raises FetchError when either cannot be read."""
    from .browser_cookies import CookieSourceError, browser_jar, cookies_from_browser

    browser = options.cookie_jar
    if browser is None and options.cookies_from_browser:
        try:
            browser = cookies_from_browser(options.cookies_from_browser).jar
        except CookieSourceError as exc:
            raise FetchError(str(exc)) from exc
    from_file = load_cookies(options.cookies) if options.cookies else None
    if browser is None or from_file is None:
        return browser if browser is not None else from_file
    jar = browser_jar()
    for cookie in [*from_file, *browser]:  # the browser's own, where both have one
        jar.set_cookie(cookie)
    return jar
