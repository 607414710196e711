"""A page's render inside the run: chromium is given the page's HTTP capture, decoded as the
extraction decodes it, and every other request it makes is answered by the run's HTTP client.

So a rendered page is never requested twice (its document is the capture), its requests wait at
the same per-host gates as the fetch's (`--delay`, `--per-host`), follow the same address rule,
skip the same dead names and carry the same cookies and `--header` scoping, and their responses
go to the same WARC files, marked as the render's (`warc.RENDER_HEADER`). Images, stylesheets,
fonts and scripts are asked for once a run, whichever page's render or fetch asked first; a
page's document and what its scripts fetch are asked for each time (they may depend on cookies).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from http.cookiejar import CookieJar

from .. import warc
from .._types import BrowserMode, Exchange, Extraction, PageStatus, Reason, Render, RenderError, WarcLocation
from .._util.faults import crash_point
from .._util.similar import text_hash
from ..browser.decide import HEAD_BYTES, better, evidence, needs_head
from ..browser.renderer import Renderer, default_tabs
from ..browser.routes import BrowserRequest, Served
from ..browser.visit import Rendered
from ..extract.charset import decode_html
from ..extract.sniff import sniff
from ..http.blocked import blocked_reason
from ..http.client import Client
from ..http.gate import Budget, Reach
from ..store import Archive
from ..store.queries import latest_resource
from .options import FetchOptions
from .resources import Seen

__all__ = ["Renders"]

Extract = Callable[[WarcLocation, str], Awaitable[Extraction]]
# kept as the page's resources (the snapshot shows them), and asked for once a run
_RESOURCE_KINDS = frozenset({"image", "stylesheet", "font"})
_ONCE_A_RUN = _RESOURCE_KINDS | {"script"}
# the browser's headers the client sets itself (or that describe chromium's connection, not the request)
_NOT_FORWARDED = frozenset({"host", "connection", "content-length", "accept-encoding", "user-agent", "keep-alive", "upgrade", "te"})


class Renders:
    """The run's renders: one chromium (started at the first page that needs it), its tabs, and
    the answers to its requests."""

    def __init__(
        self,
        archive: Archive,
        writer: warc.CaptureWriter,
        client: Client,
        budget: Budget,
        seen: Seen,
        options: FetchOptions,
        cookies: CookieJar | None,
        extract: Extract,
    ):
        self.archive, self.writer, self.client, self.budget, self.seen = archive, writer, client, budget, seen
        self.mode = BrowserMode(options.browser)
        self.max_bytes, self.extract = options.max_bytes, extract
        self.renderer = Renderer(
            options.chromium or "chromium",
            tabs=options.browser_tabs or default_tabs(),
            timeout=options.timeout,
            user_agent=options.user_agent,
            cookies=list(cookies) if cookies else [],
        )
        self.assets: dict[tuple[str, Reach], asyncio.Future[Exchange]] = {}  # asked for by a render in this run

    async def close(self) -> None:
        await self.renderer.close()

    async def reason(
        self, location: WarcLocation | None, article: Extraction | None, blocked: str | None, gain: bool | None = None, basis: str | None = None
    ) -> str | None:
        """Why the capture at `location` should be rendered (None: it should not). A page whose
        last render did not improve on this same HTTP text (`gain`, `basis`) is not rendered again."""
        if location is None:
            return None
        status = article.status if article is not None else None
        words = article.word_count if article is not None else 0
        if self.mode is not BrowserMode.ALWAYS and gain is False and article is not None and basis == text_hash(article.text):
            return None
        if blocked is None and not needs_head(self.mode, status, words):
            return None
        try:
            headers, head = await asyncio.to_thread(warc.read_head, self.archive.path, location, HEAD_BYTES)
        except Exception:  # noqa: BLE001 - an unreadable capture is not worth a browser
            return None
        return evidence(self.mode, status, words, blocked, head if sniff(head, headers.get_header("Content-Type")) == "html" else None)

    async def render(self, page_url: str, capture: Exchange, http: Extraction | None, reach: Reach) -> Render:
        """Render the page from its capture; its article when better than `http` (the capture's)."""
        document = await asyncio.to_thread(self._document, capture)
        answers = _Answers(self, page_url, reach)
        rendered = await self.renderer.render(capture.final_url, document, answers.answer)
        dom, shots = await asyncio.to_thread(self._write, capture, rendered)
        article, notes = None, list(rendered.notes)
        still = (
            blocked_reason(rendered.status or 200, rendered.final_url, page_url, rendered.dom[:65536].decode("utf-8", "replace"))
            if rendered.dom is not None
            else None
        )
        if still:
            rendered.error = rendered.error or RenderError.BLOCKED
            notes.append(f"still blocked after rendering: {still}")
        elif dom is not None:
            article = await self.extract(dom, rendered.final_url)
            if article.note:
                notes.append(article.note)
        verdict, why = better(article, http)
        notes.append(f"kept the HTTP capture: {why}" if verdict != "render" else f"the render is the article: {why}")
        return Render(
            final_url=rendered.final_url,
            status=rendered.status,
            error=rendered.error,
            note="; ".join(notes) or None,
            dom=dom,
            screenshot=shots[0],
            full_screenshot=shots[1],
            article=article if verdict == "render" else None,
            http_better=verdict == "http",
            basis=text_hash(http.text) if http is not None else None,
            resources=answers.resources(),
            done=rendered.error != RenderError.CRASH,
        )

    def _document(self, capture: Exchange) -> Served:
        """The capture as chromium is given it: an HTML page decoded as the extraction decodes it
        and handed over as UTF-8 (the header's charset wins over the page's <meta>), so that a
        GBK page with a broken byte reads in the browser exactly as in the article."""
        if capture.location is None:
            return Served(refused="failed")
        try:
            headers, body = warc.read_payload(self.archive.path, capture.location, self.max_bytes)
        except warc.WarcError:
            return Served(refused="failed")
        return _served(capture.status or 200, headers.headers, body, document=True)

    def _write(self, capture: Exchange, rendered: Rendered) -> tuple[WarcLocation | None, list[WarcLocation | None]]:
        """The DOM (a `conversion` record) and screenshots (`resource` records) written to WARC,
        flushed before the database points at them; each refers to the HTTP capture."""
        refers = warc.record_id(self.archive.path, capture.location) if capture.location else None
        source = capture.final_url
        derived: list[warc.Capture | warc.Derived] = []
        if rendered.dom is not None:
            derived.append(warc.Derived(rendered.final_url, "text/html; charset=utf-8", rendered.dom, "conversion", refers, source))
        for prefix, shot in (("urn:screenshot:", rendered.screenshot), ("urn:screenshot-full:", rendered.full_screenshot)):
            if shot is not None:
                derived.append(warc.Derived(f"{prefix}{rendered.final_url}", "image/png", shot, "resource", refers, source))
        located = iter(self.writer.write_many(derived) if derived else [])
        crash_point("render")
        dom = next(located) if rendered.dom is not None else None
        shots = [next(located) if shot is not None else None for shot in (rendered.screenshot, rendered.full_screenshot)]
        return dom, shots

    async def asset(self, url: str, headers: dict[str, str], reach: Reach, page_url: str) -> Exchange:
        """An image, stylesheet, font or script: archived before, being fetched for a page, or asked for now (once a run)."""
        if url in self.seen.archived:
            row = await asyncio.to_thread(latest_resource, self.archive.db, url)
            if row is not None and row["warc_file"]:
                return Exchange(
                    url=url,
                    final_url=url,
                    status=200,
                    content_type=row["content_type"],
                    location=WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]),
                )
        key = (url, reach)
        waiting = self.seen.pending.get(key) or self.assets.get(key)
        if waiting is not None:
            return await asyncio.shield(waiting)
        future = self.assets[key] = asyncio.get_running_loop().create_future()
        try:
            exchange = await self.client.get(url, headers, budget=self.budget, reach=reach, render_for=page_url)
        except BaseException as exc:
            del self.assets[key]  # a stop, or a failure: the next page asks again
            future.cancel() if isinstance(exc, asyncio.CancelledError) else future.set_exception(exc)
            raise
        future.set_result(exchange)
        return exchange


class _Answers:
    """One render's requests: answered from the run, within the render's byte budget."""

    def __init__(self, renders: Renders, page_url: str, reach: Reach):
        self.renders, self.page_url, self.reach = renders, page_url, reach
        self.spent = 0
        self.received: dict[str, Exchange] = {}  # the page's images, stylesheets and fonts, by URL

    async def answer(self, request: BrowserRequest) -> Served:
        renders = self.renders
        if self.spent > renders.max_bytes:
            return Served(refused="budget")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED and not k.startswith(":")}
        if request.kind in _ONCE_A_RUN and not request.navigation:
            exchange = await renders.asset(request.url, headers, self.reach, self.page_url)
        elif request.navigation:  # a page's own budget: its document (a reload after a challenge, a frame)
            exchange = await renders.client.get(request.url, headers, reach=self.reach, render_for=self.page_url)
        else:
            exchange = await renders.client.get(request.url, headers, budget=renders.budget, reach=self.reach, render_for=self.page_url)
        if exchange.location is None or exchange.revisit:
            return Served(refused="private" if exchange.error == Reason.PRIVATE_ADDRESS else "failed")
        try:
            head, body = await asyncio.to_thread(warc.read_payload, renders.archive.path, exchange.location, renders.max_bytes)
        except warc.WarcError:
            return Served(refused="failed")
        self.spent += len(body)
        if request.kind in _RESOURCE_KINDS and exchange.ok:
            self.received[request.url] = exchange
        return _served(exchange.status or 200, head.headers, body, document=request.navigation)

    def resources(self) -> list[Exchange]:
        """What the page showed of images, stylesheets and fonts: its resources."""
        return list(self.received.values())


def _served(status: int, headers: list[tuple[str, str]], body: bytes, document: bool) -> Served:
    """A stored response as chromium is given it; a document that is HTML, decoded as the extraction decodes it."""
    content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
    if document and sniff(body, content_type) == "html":
        body = decode_html(body, content_type).encode("utf-8")
        headers = [(k, v) for k, v in headers if k.lower() != "content-type"] + [("Content-Type", "text/html; charset=utf-8")]
    return Served(status=status, headers=list(headers), body=body)


def http_article(row: dict) -> Extraction | None:
    """A saved page's HTTP article, as its row stores it (for comparing a render with)."""
    if row.get("status") not in (PageStatus.ARCHIVED, PageStatus.NO_TEXT):
        return None
    return Extraction(
        status=PageStatus(row["status"]), kind="html", title=row.get("title"), text=row.get("text"), word_count=row.get("word_count") or 0
    )
