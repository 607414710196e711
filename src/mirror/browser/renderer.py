"""One chromium, driven by Playwright, rendering pages in a few tabs at a time.

Nothing is downloaded: Playwright launches the given executable (Debian's
chromium). Each page gets a fresh context (its own cookies and cache, closed
afterwards); dialogs are dismissed, pop-ups closed, downloads and permission
prompts refused. The page is loaded from the document it is given (its HTTP
capture) and every other request it makes is answered by the caller's `Fetcher`
(the run's HTTP client, with its gates and rules). A page is captured as soon as
it is quiet (no request and no DOM change for a moment, before and after
scrolling through it), or as it is when the time runs out. A browser that
crashes or hangs is replaced; one over its memory limit is replaced between pages.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections import Counter
from http.cookiejar import Cookie
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .._enums import BrowserMode, RenderError
from .memory import browser_pss_mb
from .routes import Fetcher, Served
from .visit import VIEWPORT, Rendered, Visit, short

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

__all__ = ["BrowserChoice", "Renderer", "default_tabs", "find_chromium", "memory_limit_mb", "resolve"]

LAUNCH_ARGS = [
    "--no-sandbox",  # we run as root in containers; the pages' scripts still run in a renderer process
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # containers have a tiny /dev/shm
    "--mute-audio",
    "--js-flags=--max-old-space-size=256",  # a runaway page script cannot take the machine's memory
    "--renderer-process-limit=4",  # site isolation would start a renderer per site a page embeds
    "--disable-extensions",
    # a page kept for the back button would hold its memory until the context closes; Local
    # Network Access would take a document our route fulfilled for a public one and refuse its
    # loopback requests: which addresses a page may reach is the run's rule (`routes`); every
    # context is a window, and chromium 14x loads two address-bar pop-ups (WebUI renderers) into
    # each, which cost more CPU than a page's own render (bench/RESULTS.md, "Browser")
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,BackForwardCache,"
    "LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
]
RESTART_EVERY = 200  # pages per browser process: memory a long run leaks is given back
# the browser (chromium and Playwright's driver, PSS) is restarted between pages above this: a page
# in flight meanwhile adds up to ~300 MB, and the bound is 1 GB
MEMORY_MB = 700.0
PAGE_MB = 300.0  # what a page in flight may add to MEMORY_MB: past both, the page is stopped (the 1 GB bound)
MEMORY_POLL = 1.0  # seconds between two looks at the browser's memory during a page
GRACE = 30.0  # beyond --timeout, for screenshots and closing; past it the browser counts as hung
TAB_MB = 400.0  # what a tab's page may take, for the default number of tabs
MAX_TABS = 4  # the renderer process limit (--renderer-process-limit)


def find_chromium(explicit: str | os.PathLike | None = None) -> str | None:
    """`--chromium PATH`, else `MIRROR_CHROMIUM`, else Debian's chromium on the PATH."""
    named = explicit or os.environ.get("MIRROR_CHROMIUM")
    if named:
        path = Path(named)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserChoice(NamedTuple):
    mode: BrowserMode
    chromium: str | None  # its path
    problem: str | None  # why the browser is off


def resolve(mode: str, chromium: str | None = None) -> BrowserChoice:
    """The browser a run uses for the options a user gave.

    `auto` without a usable chromium or Playwright becomes `never`, with the reason.
    """
    mode = BrowserMode(mode)
    if mode is BrowserMode.NEVER:
        return BrowserChoice(mode, None, None)
    path = find_chromium(chromium)
    problem = None
    if path is None:
        named = chromium or os.environ.get("MIRROR_CHROMIUM")
        problem = f"{named}: not an executable chromium" if named else "no chromium found (apt install chromium, or --chromium PATH)"
    else:
        try:
            import playwright.async_api  # noqa: F401
        except ImportError:
            problem = "Playwright is not installed (pip install playwright)"
    try:
        memory_limit_mb()
    except ValueError:
        problem = problem or f"MIRROR_BROWSER_MEMORY_MB={os.environ['MIRROR_BROWSER_MEMORY_MB']!r}: not a number of megabytes"
    if problem:
        return BrowserChoice(BrowserMode.NEVER, None, problem)
    return BrowserChoice(mode, path, None)


def default_tabs() -> int:
    """Pages rendered at once when `--browser-tabs` is not given: one per core, as many as the
    memory holds at TAB_MB each beside the rest of the run, at least 1 and at most MAX_TABS."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (ValueError, OSError, AttributeError):
        available = 2 * TAB_MB
    return max(1, min(MAX_TABS, os.cpu_count() or 1, int(available // TAB_MB)))


def memory_limit_mb() -> float:
    """`MIRROR_BROWSER_MEMORY_MB` (0: no limit), else MEMORY_MB; ValueError if it is not a number of MB."""
    text = os.environ.get("MIRROR_BROWSER_MEMORY_MB", "").strip()
    if not text:
        return MEMORY_MB
    value = float(text)
    if not value >= 0:  # negative or nan
        raise ValueError(text)
    return value


class Renderer:
    def __init__(
        self,
        chromium: str,
        *,
        tabs: int,
        timeout: float,
        user_agent: str,
        cookies: list[Cookie],
        memory_mb: float | None = None,
    ):
        """`memory_mb` defaults to `memory_limit_mb()`. The `cookies` (the user's, each for its
        own domain) are in every page's context, so that its scripts and its requests see them."""
        self.chromium, self.timeout, self.user_agent = chromium, timeout, user_agent
        self.cookies = [_playwright_cookie(c) for c in cookies]
        self.memory_mb = memory_limit_mb() if memory_mb is None else memory_mb
        self.restarts = 0  # for memory or age, not counting crashes and hangs
        self._tabs = asyncio.Semaphore(tabs)
        self._lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._rendered = 0
        self._retire: str | None = None  # why the current browser is to be replaced once its tabs are done
        self._using: Counter = Counter()  # browser -> renders in it now
        self._released = asyncio.Condition()
        self._unusable: str | None = None
        self._over: dict[object, str] = {}  # browser -> why it was stopped for its memory

    async def render(self, url: str, document: Served, fetch: Fetcher) -> Rendered:
        """Render the page at `url` from `document` (its capture), its other requests answered
        by `fetch`; never raises (but for cancellation): failures are in `error` and `notes`."""
        async with self._tabs:
            result = Rendered(url=url, final_url=url)
            if self._unusable:  # one failed start is enough: the rest of the run goes on without a browser
                result.error, result.notes = RenderError.CRASH, [self._unusable]
                return result
            try:
                browser = await self._current()
            except Exception as exc:  # noqa: BLE001
                self._unusable = f"chromium did not start: {short(exc)}"
                result.error, result.notes = RenderError.CRASH, [self._unusable]
                return result
            try:
                await self._visit(browser, result, document, fetch)
            finally:
                await self._release(browser, result)
            return result

    async def _watch_memory(self, browser) -> None:
        """During a page: stop the browser once it passes `memory_mb` + PAGE_MB (canvases,
        ArrayBuffers and workers are outside the script heap's limit, and a page can take
        gigabytes between two checks at the page's end)."""
        bound = max(self.memory_mb, MEMORY_MB) + PAGE_MB  # the 1 GB bound, or the user's limit and a page
        while browser.is_connected():
            await asyncio.sleep(MEMORY_POLL)
            used = await asyncio.to_thread(browser_pss_mb, os.getpid())
            if used > bound and browser.is_connected():
                self._over[browser] = f"the browser passed {bound:g} MB ({used:.0f} MB) during this page (or another tab's); it was stopped"
                await self._replace(browser)
                return

    async def _visit(self, browser, result: Rendered, document: Served, fetch: Fetcher) -> None:
        context = visit = None
        watcher = asyncio.ensure_future(self._watch_memory(browser)) if self.memory_mb else None
        try:
            async with asyncio.timeout(self.timeout + GRACE):
                context = await browser.new_context(
                    user_agent=self.user_agent,
                    viewport=VIEWPORT,
                    accept_downloads=False,
                    service_workers="block",  # their fetches would not be seen, so not captured
                    permissions=[],
                )
                if self.cookies:
                    await context.add_cookies(self.cookies)
                visit = Visit(self, context, result, document, fetch)
                await visit.run()
        except TimeoutError:
            result.error = RenderError.HUNG
            result.notes.append(f"the browser did not answer within {self.timeout + GRACE:g} s; it was restarted")
            await self._replace(browser)
        except Exception as exc:  # noqa: BLE001 - a page must not end the run
            if browser in self._over:
                result.error = RenderError.MEMORY
                result.notes.append(self._over[browser])
            elif not browser.is_connected():
                result.error = RenderError.CRASH
                result.notes.append(f"the browser crashed ({short(exc)}); it was restarted")
                await self._replace(browser)
            else:
                result.error = result.error or RenderError.FAILED
                result.notes.append(short(exc))
        finally:
            if visit is not None:  # its requests still under way go no further
                await visit.stop_answering()
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            if browser in self._over and result.error != RenderError.MEMORY:  # stopped while the page went on
                result.error, result.dom, result.screenshot, result.full_screenshot = RenderError.MEMORY, None, None, None
                result.notes.append(self._over[browser])
            if context is not None:
                try:
                    async with asyncio.timeout(10):
                        await context.close()
                except Exception:  # noqa: BLE001
                    await self._replace(browser)

    async def _current(self):
        """The browser for the next render; one that is due for a restart is closed first, once
        the renders still in it have ended (so a restart never cuts another tab's page short)."""
        async with self._lock:
            if self._browser is not None and not self._browser.is_connected():
                await self._stop_browser()
            if self._browser is not None and (self._retire or self._rendered >= RESTART_EVERY):
                browser = self._browser
                try:
                    async with asyncio.timeout(self.timeout + GRACE + 10), self._released:
                        await self._released.wait_for(lambda: not self._using[browser])
                except TimeoutError:
                    pass
                if self._browser is browser:
                    await self._stop_browser()
                    self.restarts += 1
            if self._browser is None:
                if self._playwright is None:
                    from playwright.async_api import async_playwright

                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(executable_path=self.chromium, headless=True, args=LAUNCH_ARGS, timeout=60_000)
                self._rendered, self._retire = 0, None
            self._rendered += 1
            self._using[self._browser] += 1
            return self._browser

    async def _release(self, browser, result: Rendered) -> None:
        """A render has ended: measure the browser's memory while it is between pages."""
        async with self._released:
            self._using[browser] -= 1
            if self._using[browser] <= 0:
                del self._using[browser]
            self._released.notify_all()
        if browser is self._browser and not self._retire and self.memory_mb:
            used = await asyncio.to_thread(browser_pss_mb, os.getpid())
            if used > self.memory_mb:
                self._retire = f"{used:.0f} MB over the {self.memory_mb:g} MB limit"
                result.notes.append(f"the browser took {self._retire}; it was restarted")

    async def _replace(self, browser) -> None:
        """After a crash or a hang: the next render gets a new browser (no lock: the render
        that waits for this one to end may hold it)."""
        if self._browser is browser:
            await self._stop_browser()

    async def _stop_browser(self) -> None:
        browser, self._browser = self._browser, None
        if browser is None:
            return
        try:
            async with asyncio.timeout(10):
                await browser.close()
        except Exception:  # noqa: BLE001 - a hung browser: stopping the driver takes it down
            await self._stop_driver()

    async def _stop_driver(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            try:
                async with asyncio.timeout(10):
                    await playwright.stop()
            except Exception:  # noqa: BLE001
                pass

    async def close(self) -> None:
        async with self._lock:
            if self._browser is not None:
                await self._stop_browser()
            await self._stop_driver()


def _playwright_cookie(cookie: Cookie) -> dict:
    """A cookies.txt cookie as Playwright takes it: still only for its own domain."""
    return {
        "name": cookie.name,
        "value": cookie.value or "",
        "domain": cookie.domain,
        "path": cookie.path or "/",
        "expires": float(cookie.expires) if cookie.expires else -1,
        "secure": bool(cookie.secure),
        "httpOnly": bool(cookie.has_nonstandard_attr("HttpOnly")),
    }
