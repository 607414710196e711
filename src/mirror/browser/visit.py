"""One page's visit in a fresh browser context: load (the page's HTTP capture, its other requests
answered by the run: `routes`), settle (quiet, scrolled, quiet again; a challenge given time to
reload), capture (the DOM, screenshots), with dialogs dismissed, pop-ups closed and downloads refused."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .._enums import RenderError
from ..http.blocked import blocked_reason
from .routes import Fetcher, Routes, Served

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, FloatRect

__all__ = ["FULL_PAGE_MAX_HEIGHT", "VIEWPORT", "Rendered", "Visit", "short"]

VIEWPORT = {"width": 1280, "height": 800}
FULL_PAGE_MAX_HEIGHT = 8000  # the full-page screenshot stops here (10 screens)
MAX_SCROLLS = 30  # screens scrolled to wake lazy images
QUIET = 0.5  # seconds without a request or a DOM change: the page has settled
LONG_REQUEST = 5.0  # a request pending longer (a long poll, a hanging tracker) no longer holds the page up
POLL = 0.1


_REFUSED = {
    "dialog": ("dialog dismissed", "dialogs dismissed"),
    "popup": ("pop-up refused", "pop-ups refused"),
    "download": ("download refused", "downloads refused"),
    "private": (
        "request to a more private address than the page's refused (--allow-private to allow)",
        "requests to more private addresses than the page's refused (--allow-private to allow)",
    ),
    "write": ("request other than GET not sent", "requests other than GET not sent"),
    "socket": ("WebSocket refused", "WebSockets refused"),
    "budget": ("response over the render's --max-bytes budget not fetched", "responses over the render's --max-bytes budget not fetched"),
}
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
    error: RenderError | None = None
    notes: list[str] = field(default_factory=list)


class Rules(Protocol):
    """What a visit needs of its renderer."""

    timeout: float


class Visit(Routes):
    """One page in one context: load, settle, capture."""

    result: Rendered

    def __init__(self, renderer: Rules, context: BrowserContext, result: Rendered, document: Served, fetch: Fetcher):
        self.renderer, self.context, self.result = renderer, context, result
        self.document, self.fetch = document, fetch
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + renderer.timeout
        self.answering: set[asyncio.Task] = set()
        self.counts = dict.fromkeys(_REFUSED, 0)
        self.download_started = asyncio.Event()
        self.in_flight: dict[object, float] = {}  # request -> when it started
        self.last_request = self.loop.time()

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
        page.on("requestfinished", self._ended)
        await page.add_init_script(_WATCH_CHANGES)
        await self.route()
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
        elif (failed := loading.exception()) is not None:
            if "Download is starting" not in str(failed):
                raise failed
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
                clip: FloatRect = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": min(height, FULL_PAGE_MAX_HEIGHT)}
                self.result.full_screenshot = await page.screenshot(type="png", full_page=True, clip=clip, timeout=shot, animations="disabled")
        except Exception as exc:  # noqa: BLE001 - the DOM is still worth keeping
            self.result.notes.append(f"no screenshot: {short(exc)}")

    async def _finish(self) -> None:
        await self.stop_answering()
        for kind, (one, many) in _REFUSED.items():
            if self.counts.get(kind):
                self.result.notes.append(f"{self.counts[kind]} {one if self.counts[kind] == 1 else many}")

    async def stop_answering(self) -> None:
        """The requests still being answered are stopped: the page is captured (or given up)."""
        tasks = list(self.answering)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

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


def short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
