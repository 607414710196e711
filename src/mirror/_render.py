"""One chromium, driven by Playwright, rendering pages in a few tabs at a time.

Nothing is downloaded: Playwright launches the given executable (Debian's
chromium). Each page gets a fresh context (its own cookies and cache, closed
afterwards); dialogs are dismissed, pop-ups closed, downloads and permission
prompts refused. A page is captured as soon as it is quiet (no request and no
DOM change for a moment, before and after scrolling through it), or as it is
when the time runs out. A browser that crashes or hangs is replaced; one over
its memory limit is replaced between pages. Given a `Reach`, a page's requests
go only to addresses no more private than that (the HTTP fetcher's rule).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.cookiejar import Cookie
from urllib.parse import urljoin, urlsplit

from ._blocked import blocked_reason
from ._client import Reach, proxied
from ._procmem import browser_pss_mb
from ._types import RenderError
from .warc import Capture

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
    # loopback requests: which addresses a page may reach is our route's rule (`_Visit.route`)
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,BackForwardCache,"
    "LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests",
]
VIEWPORT = {"width": 1280, "height": 800}
FULL_PAGE_MAX_HEIGHT = 8000  # the full-page screenshot stops here (10 screens)
MAX_SCROLLS = 30  # screens scrolled to wake lazy images
QUIET = 0.5  # seconds without a request or a DOM change: the page has settled
LONG_REQUEST = 5.0  # a request pending longer (a long poll, a hanging tracker) no longer holds the page up
POLL = 0.1
RESTART_EVERY = 200  # pages per browser process: memory a long run leaks is given back
MEMORY_MB = 700.0  # the browser (chromium and Playwright's driver, PSS) is restarted between pages above this: a page in flight meanwhile adds up to ~300 MB, and the bound is 1 GB
PAGE_MB = 300.0  # what a page in flight may add to MEMORY_MB: past both, the page is stopped (the 1 GB bound)
MEMORY_POLL = 1.0  # seconds between two looks at the browser's memory during a page
MAX_REDIRECTS = 10  # a navigation's redirects checked hop by hop, as the HTTP fetcher follows them
GRACE = 30.0  # beyond --timeout, for screenshots and closing; past it the browser counts as hung


_REFUSED = {"dialog": ("dialog dismissed", "dialogs dismissed"), "popup": ("pop-up refused", "pop-ups refused"),
            "download": ("download refused", "downloads refused"),
            "private": ("request to a more private address than the page's refused (--allow-private to allow)",
                        "requests to more private addresses than the page's refused (--allow-private to allow)")}
# a page that sets a cookie in JavaScript and then reloads (zhihu's and others' checks)
# milliseconds since the DOM last changed: a MutationObserver installed before the page's own scripts run
_WATCH_CHANGES = """(() => { const mark = () => { window.__mirrorChanged = performance.now(); }; mark();
new MutationObserver(mark).observe(document, {childList: true, subtree: true, characterData: true}); })();"""
_CHANGED_AGO = "() => window.__mirrorChanged === undefined ? 0 : performance.now() - window.__mirrorChanged"
# a screen at a time, two frames apart (IntersectionObserver callbacks run between them), then back to the top
_SCROLL = """async (most) => {
  const frame = () => new Promise(done => { requestAnimationFrame(() => requestAnimationFrame(done)); setTimeout(done, 100); });
  for (let i = 0; i < most; i++) {
    const end = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
    if (end) break;
    window.scrollBy(0, window.innerHeight);
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
}"""
_SETS_COOKIE = re.compile(r"document\.cookie\s*=")
_RELOADS = re.compile(r"location\.(?:reload|replace|assign|href\s*=)|location\s*=")


@dataclass
class Rendered:
    """What the browser made of a page."""

    url: str
    final_url: str
    status: int | None = None  # the main document's HTTP status
    dom: bytes | None = None  # serialized DOM after the page settled, UTF-8
    screenshot: bytes | None = None  # PNG of the first screen
    full_screenshot: bytes | None = None  # PNG of the page, at most FULL_PAGE_MAX_HEIGHT tall
    responses: list[Capture] = field(default_factory=list)
    error: RenderError | None = None
    notes: list[str] = field(default_factory=list)


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
        headers: dict[str, str],
        cookies: list[Cookie],
        max_bytes: int,
        memory_mb: float | None = None,
        reach_of: Callable[[str], Awaitable[object]] | None = None,
        private_hosts: frozenset[str] | None = None,
    ):
        """`memory_mb` defaults to `memory_limit_mb()`; `reach_of` says how private a URL's
        address is (a `Reach`, or anything else when unknown), for renders given a `reach` limit.
        `headers` (the user's --header values) go only to `private_hosts` (None: to every host)."""
        self.chromium, self.timeout, self.max_bytes = chromium, timeout, max_bytes
        self.user_agent, self.headers, self.private_hosts = user_agent, headers, private_hosts
        self.cookies = [_playwright_cookie(c) for c in cookies]
        self.memory_mb = memory_limit_mb() if memory_mb is None else memory_mb
        self.reach_of = reach_of
        self.restarts = 0  # for memory or age, not counting crashes and hangs
        self._tabs = asyncio.Semaphore(tabs)
        self._lock = asyncio.Lock()
        self._playwright = None
        self._browser = None
        self._rendered = 0
        self._retire: str | None = None  # why the current browser is to be replaced once its tabs are done
        self._using: Counter = Counter()  # browser -> renders in it now
        self._released = asyncio.Condition()
        self._unusable: str | None = None
        self._over: dict[object, str] = {}  # browser -> why it was stopped for its memory

    async def render(self, url: str, reach: Reach | None = None) -> Rendered:
        """Render `url`; never raises (but for cancellation): failures are in `error` and `notes`.

        With `reach`, the page's requests go only to addresses no more private than that (the
        HTTP fetcher's rule for a page's resources); the others are refused and counted.
        """
        async with self._tabs:
            result = Rendered(url=url, final_url=url)
            if self._unusable:  # one failed start is enough: the rest of the run goes on without a browser
                result.error, result.notes = RenderError.CRASH, [self._unusable]
                return result
            try:
                browser = await self._current()
            except Exception as exc:  # noqa: BLE001
                self._unusable = f"chromium did not start: {_short(exc)}"
                result.error, result.notes = RenderError.CRASH, [self._unusable]
                return result
            try:
                await self._visit(browser, result, reach)
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

    async def _visit(self, browser, result: Rendered, reach: Reach | None) -> None:
        context = None
        watcher = asyncio.ensure_future(self._watch_memory(browser)) if self.memory_mb else None
        try:
            async with asyncio.timeout(self.timeout + GRACE):
                context = await browser.new_context(
                    user_agent=self.user_agent,
                    # for every request; else they are added by the route, to the seed hosts only
                    extra_http_headers=self.headers if self.private_hosts is None else None,
                    viewport=VIEWPORT,
                    accept_downloads=False,
                    service_workers="block",  # their fetches would not be seen, so not captured
                    permissions=[],
                )
                if self.cookies:
                    await context.add_cookies(self.cookies)
                visit = _Visit(self, context, result)
                guarded = reach is not None and self.reach_of is not None
                if guarded or (self.headers and self.private_hosts is not None):
                    await visit.route(reach if guarded else None)
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
                result.notes.append(f"the browser crashed ({_short(exc)}); it was restarted")
                await self._replace(browser)
            else:
                result.error = result.error or RenderError.FAILED
                result.notes.append(_short(exc))
        finally:
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
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self.chromium, headless=True, args=LAUNCH_ARGS, timeout=60_000
                )
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


class _Visit:
    """One page in one context: load, settle, capture."""

    def __init__(self, renderer: Renderer, context, result: Rendered):
        self.renderer, self.context, self.result = renderer, context, result
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + renderer.timeout
        self.saving: set[asyncio.Task] = set()
        self.bytes = 0
        self.dropped = 0
        self.counts = dict.fromkeys(_REFUSED, 0)
        self.download_started = asyncio.Event()
        self.in_flight: dict[object, float] = {}  # request -> when it started
        self.last_request = self.loop.time()
        self.reach: Reach | None = None  # with `route`: how private the page's requests may be

    def left_ms(self, cap: float | None = None) -> float:
        left = max(self.deadline - self.loop.time(), 0.05)
        return 1000 * (min(left, cap) if cap else left)

    async def run(self) -> None:
        page = await self.context.new_page()
        self.page = page
        page.on("popup", self._popup)
        page.on("dialog", self._dialog)
        page.on("download", self._download)
        page.on("response", self._document)
        page.on("request", self._started)
        page.on("requestfailed", self._ended)
        page.on("requestfinished", self._finished)
        await page.add_init_script(_WATCH_CHANGES)
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        # a page that starts a download never finishes loading: stop waiting at the download
        loading = asyncio.ensure_future(page.goto(self.result.url, wait_until="domcontentloaded", timeout=self.left_ms()))
        downloading = asyncio.ensure_future(self.download_started.wait())
        await asyncio.wait([loading, downloading], return_when=asyncio.FIRST_COMPLETED)
        downloading.cancel()
        if not loading.done():
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
        elif isinstance(loading.exception(), PlaywrightTimeout):
            self._timed_out("the page did not load")
        elif loading.exception() is not None:
            if "Download is starting" not in str(loading.exception()):
                raise loading.exception()
            self.counts["download"] = max(self.counts["download"], 1)
            self.result.error = RenderError.FAILED
            self.result.notes.append("the address is a download, not a page")
            await self._finish()
            return
        await self._settle()
        await self._capture()
        await self._finish()

    async def _settle(self) -> None:
        """Quiet, lazy images scrolled into view and quiet again, and a challenge given time to reload."""
        for _ in range(3):  # a challenge that reloads into another challenge gets three chances
            await self._quiet()
            await self._scroll()
            await self._quiet()
            if not await self._looks_unfinished():
                return
            try:  # a JavaScript challenge computes its cookie, then navigates
                await self.page.wait_for_event("framenavigated", timeout=self.left_ms(cap=8))
                await self.page.wait_for_load_state("domcontentloaded", timeout=self.left_ms())
            except Exception:  # noqa: BLE001 - nothing more came
                return

    async def _quiet(self) -> None:
        """Wait until the page is settled: for QUIET seconds no request started or in flight (but
        those pending for LONG_REQUEST, a long poll or a hanging tracker) and no DOM change.
        Ends at the deadline, which marks the render as timed out."""
        while True:
            if self.page.is_closed():  # the browser was stopped under it (its memory)
                raise RuntimeError("the page was closed while it settled")
            now = self.loop.time()
            waiting = [t for t in self.in_flight.values() if now - t < LONG_REQUEST]
            changed = await self._dom_changed_ago()
            if not waiting and now - self.last_request >= QUIET and changed >= QUIET:
                return
            if now >= self.deadline:
                n = len(self.in_flight)
                busy = [f"{n} request{'s' if n != 1 else ''} in flight"] if n else []
                busy += ["the page kept changing"] if changed < QUIET else []
                self._timed_out(f"the page never went idle ({', '.join(busy) or 'busy'})")
                return
            await asyncio.sleep(POLL)

    async def _dom_changed_ago(self) -> float:
        """Seconds since the page's DOM last changed (0 while it is navigating)."""
        try:
            return await self.page.evaluate(_CHANGED_AGO) / 1000
        except Exception:  # noqa: BLE001 - navigating right now
            return 0.0

    async def _scroll(self) -> None:
        """A screen at a time, a frame apart, to the end (at most MAX_SCROLLS screens), then back to the top."""
        try:
            await self.page.evaluate(_SCROLL, MAX_SCROLLS)
        except Exception:  # noqa: BLE001 - the page navigated while scrolling
            pass

    async def _looks_unfinished(self) -> bool:
        """A challenge page, or a near-empty one that sets a cookie and reloads: worth waiting for."""
        try:
            html = await self.page.content()
            text = await self.page.evaluate("() => (document.body && document.body.innerText || '').length")
        except Exception:  # noqa: BLE001 - navigating right now
            return True
        if blocked_reason(self.result.status or 200, self.page.url, self.result.url, html[:65536]):
            return True
        return text < 200 and bool(_SETS_COOKIE.search(html)) and bool(_RELOADS.search(html))

    async def _capture(self) -> None:
        page = self.page
        if not await self._allowed(page.url, count=False):  # landed where it may not (a redirect behind a proxy)
            self.result.final_url = page.url
            self.result.error = RenderError.BLOCKED
            self.result.notes.append("the page navigated to a more private address than its own; nothing of it was kept (--allow-private to allow)")
            return
        for _ in range(3):
            try:
                self.result.dom = (await page.content()).encode("utf-8")
                break
            except Exception:  # noqa: BLE001 - navigated between settling and now
                await asyncio.sleep(0.5)
        self.result.final_url = page.url
        shot = 10_000  # screenshots get time of their own (GRACE)
        try:
            self.result.screenshot = await page.screenshot(type="png", timeout=shot, animations="disabled")
            height = await page.evaluate("() => document.documentElement.scrollHeight")
            if height > VIEWPORT["height"]:
                clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": min(height, FULL_PAGE_MAX_HEIGHT)}
                self.result.full_screenshot = await page.screenshot(type="png", full_page=True, clip=clip, timeout=shot, animations="disabled")
        except Exception as exc:  # noqa: BLE001 - the DOM is still worth keeping
            self.result.notes.append(f"no screenshot: {_short(exc)}")

    async def _finish(self) -> None:
        if self.saving:
            await asyncio.wait(self.saving, timeout=5)
            for task in self.saving:
                task.cancel()
        for kind, (one, many) in _REFUSED.items():
            if self.counts[kind]:
                self.result.notes.append(f"{self.counts[kind]} {one if self.counts[kind] == 1 else many}")
        if self.dropped:
            self.result.notes.append(f"{self.dropped} responses over the {self.renderer.max_bytes:,}-byte budget not saved")

    def _timed_out(self, what: str) -> None:
        if self.result.error is None:
            self.result.error = RenderError.TIMEOUT
            self.result.notes.append(f"{what} within {self.renderer.timeout:g} s; captured as it was then")

    async def _refuse(self, kind: str, refusal) -> None:
        """Count a dialog, pop-up or download and refuse it; one that is already gone is fine."""
        self.counts[kind] += 1
        try:
            await refusal()
        except Exception:  # noqa: BLE001
            pass

    async def route(self, reach: Reach | None) -> None:
        """Route every request (and WebSocket) of the page: through the address rule (with a
        `reach`), and with the user's --header values for the seed hosts only.

        Chromium follows a redirect without asking the route again, and the headers a route
        adds go along with it. So a request to a seed host is fetched here with the user's
        headers, one hop: a redirect goes back to the browser as it is, which follows it
        without them. A navigation (with a `reach`) is fetched here too, its redirects hop by
        hop, each checked: one to a more private address is refused before it is asked for.
        (The fetches here do not go through a proxy: behind one, the browser sends no
        --header values, and a navigation's redirects are checked once it has landed.)"""
        self.reach = reach
        await self.context.route("**/*", self._route)
        if reach is not None:
            await self.context.route_web_socket(re.compile(".*"), self._route_socket)

    async def _allowed(self, url: str, count: bool = True) -> bool:
        if self.reach is None or not url.startswith(("http://", "https://", "ws://", "wss://")) or url == self.result.url:
            return True  # data:, blob: and the like never leave the browser; the page itself is asked for
        host = (urlsplit(url).hostname or "").rstrip(".")
        if host == "localhost" or host.endswith(".localhost"):  # chromium answers these itself: this machine
            where: object = Reach.LOOPBACK
        else:
            where = await self.renderer.reach_of(url.replace("ws", "http", 1) if url.startswith("ws") else url)
        if not isinstance(where, Reach) or where > self.reach:
            # (a name our resolver cannot look up is refused too: chromium's may answer it otherwise)
            self.counts["private"] += count
            return False
        return True

    def _private_headers(self, url: str) -> dict[str, str]:
        hosts = self.renderer.private_hosts
        return self.renderer.headers if hosts is not None and (urlsplit(url).hostname or "") in hosts else {}

    async def _route(self, route) -> None:
        try:
            request = route.request
            if not await self._allowed(request.url):
                await route.abort("blockedbyclient")
                return
            if proxied(request.url):
                await route.continue_()
                return
            extra = self._private_headers(request.url)
            navigation = self.reach is not None and request.is_navigation_request()
            if not extra and not navigation:
                await route.continue_()
                return
            # (the context's cookies go with it: the fetch is the browser context's)
            response = await route.fetch(headers={**request.headers, **extra} if extra else None, max_redirects=0)
            if navigation and not await self._redirects_allowed(route, response):
                await route.abort("blockedbyclient")
                return
            await route.fulfill(response=response)
        except Exception:  # noqa: BLE001 - the fetch failed, or the page or its context closed meanwhile
            try:  # a request left unanswered would hold the page until the render's deadline
                await route.abort("failed")
            except Exception:  # noqa: BLE001 - answered already, or gone
                pass

    async def _redirects_allowed(self, route, response) -> bool:
        """Whether every hop of a navigation's redirects is allowed, asked hop by hop (the
        browser then follows them itself, unasked)."""
        url = route.request.url
        for _ in range(MAX_REDIRECTS):
            location = response.headers.get("location") if 300 <= response.status < 400 else None
            if not location:
                return True
            url = urljoin(url, location)
            if not url.startswith(("http://", "https://")) or not await self._allowed(url):
                return False
            response = await route.fetch(url=url, max_redirects=0)
        return False

    async def _route_socket(self, socket) -> None:
        try:
            if await self._allowed(socket.url):
                socket.connect_to_server()
            else:
                await socket.close(code=1008, reason="refused by the archiver")
        except Exception:  # noqa: BLE001
            pass

    async def _dialog(self, dialog) -> None:
        await self._refuse("dialog", dialog.dismiss)

    async def _popup(self, popup) -> None:
        await self._refuse("popup", popup.close)

    async def _download(self, download) -> None:
        self.download_started.set()
        await self._refuse("download", download.cancel)

    def _document(self, response) -> None:
        """The main frame's document: its status is the page's."""
        if response.request.is_navigation_request() and response.frame == self.page.main_frame:
            self.result.status = response.status

    def _started(self, request) -> None:
        self.in_flight[request] = self.last_request = self.loop.time()

    def _ended(self, request) -> None:
        self.in_flight.pop(request, None)

    def _finished(self, request) -> None:
        self._ended(request)
        task = asyncio.ensure_future(self._save(request))
        self.saving.add(task)
        task.add_done_callback(self.saving.discard)

    async def _save(self, request) -> None:
        """A response the browser received, as a WARC capture (so the snapshot can be replayed);
        not one from a more private address than the page may reach (a redirect got there)."""
        if not request.url.startswith(("http://", "https://")) or not await self._allowed(request.url, count=False):
            return
        try:
            response = await request.response()
            if response is None:
                return
            try:
                body = await response.body()
            except Exception:  # noqa: BLE001 - redirects and aborted loads have no body
                body = b""
            headers = [(h["name"], h["value"]) for h in await response.headers_array()]
            request_headers = [(h["name"], h["value"]) for h in await request.headers_array()]
        except Exception:  # noqa: BLE001 - the page closed under it: a response in flight is lost
            return
        if self.bytes + len(body) > self.renderer.max_bytes:
            self.dropped += 1
            return
        self.bytes += len(body)
        self.result.responses.append(
            Capture(
                url=request.url,
                method=request.method,
                request_headers=request_headers,
                status=response.status,
                reason=response.status_text,
                http_version="HTTP/1.1",
                # the body is stored decoded, so its encoding no longer applies
                response_headers=[(k, v) for k, v in headers if k.lower() != "content-encoding"],
                body=io.BytesIO(body),
            )
        )


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


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
