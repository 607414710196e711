"""Browser capture: pages that need JavaScript, JavaScript challenges, a screenshot.

A pass after the HTTP fetch. It picks from the archive the pages whose HTTP
capture has no article text, looks like a JavaScript application shell or is
a JavaScript challenge (every HTML page with `--browser always`), renders each
in Debian's chromium driven by Playwright, and stores in the WARC files the
responses the browser received, the rendered DOM (a `conversion` record that
refers to the HTTP capture) and PNG screenshots. The article is extracted from
the rendered DOM when that has more text. Records are flushed before the
database points at them, and each page is one transaction: a kill -9 loses only
the renders in flight, which the next run does again.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.parse import urlsplit

from .. import warc
from .._types import BrowserMode, CaptureKind, Exchange, Extraction, PageStatus, RenderError, Source
from .._util.faults import crash_point
from ..extract.pool import safe_extract
from ..http.blocked import blocked_reason
from ..http.gate import HostGate, Reach
from ..store import Archive, now
from ..store.queries import warc_location, warc_values
from .renderer import Rendered, Renderer, memory_limit_mb

__all__ = ["BrowserMode", "CaptureKind", "RenderError", "find_chromium", "render_pass", "resolve"]


# `blocked` reasons (see mirror.http.blocked) that a real browser can get past; sign-in walls need --cookies.
CHALLENGES = ("Cloudflare challenge", "zhihu anti-bot check", "WeChat verification page")
SHELL_WORDS = 100  # a page with fewer words is checked for an application shell
_SHELL = re.compile(
    r"""<div[^>]+id\s*=\s*["']?(?:root|app|__next|__nuxt|svelte)\b[^>]*>\s*</div>"""
    r"|<noscript[^>]*>[^<]{0,300}\b(?:enable|requires?|need)\b[^<]{0,60}javascript",
    re.I,
)


def find_chromium(explicit: str | os.PathLike | None = None) -> str | None:
    """`--chromium PATH`, else `MIRROR_CHROMIUM`, else Debian's chromium on the PATH."""
    named = explicit or os.environ.get("MIRROR_CHROMIUM")
    if named:
        path = Path(named)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def resolve(mode: str, chromium: str | None = None) -> tuple[BrowserMode, str | None, str | None]:
    """(mode, chromium path, why the browser is off) for the options a user gave.

    `auto` without a usable chromium or Playwright becomes `never`, with the reason.
    """
    mode = BrowserMode(mode)
    if mode is BrowserMode.NEVER:
        return mode, None, None
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
        return BrowserMode.NEVER, None, problem
    return mode, path, None


def needs_render(archive: Archive, page: dict, mode: BrowserMode) -> bool:
    """Whether a candidate from `Archive.pages_to_render` is worth a browser."""
    if mode is BrowserMode.ALWAYS or page["status"] != PageStatus.ARCHIVED:
        return True  # no text, or a challenge
    try:  # a thin page: is it an application shell that JavaScript fills in?
        _, body = warc.read_head(archive.path, warc_location(page), 200_000)
    except Exception:  # noqa: BLE001 - an unreadable capture is not worth a browser
        return False
    return bool(_SHELL.search(body.decode("utf-8", "replace")))


async def render_pass(
    archive: Archive,
    writer: warc.CaptureWriter,
    pool,
    options,
    cookies: CookieJar | None,
    progress: Counter,
    on_render: Callable[[str, str, PageStatus | None], None] | None = None,
    reach_of: Callable[[str], Awaitable[object]] | None = None,
    page_reach: Callable[[str], Awaitable[Reach]] | None = None,
) -> None:
    """Render the pages that need a browser; counts outcomes into `progress`, reports each to
    `on_render` with the page's new status when the browser's capture replaced the HTTP one.
    `reach_of` (the HTTP client's) says how private a URL's address is, `page_reach` how
    private the addresses a page's resources may come from are (as for the HTTP fetcher's
    images: no more than the page's own unless `--allow-private`); without them, any.

    `options` is the run's FetchOptions (browser, chromium, browser_tabs,
    timeout, per_host, delay, user_agent, headers, max_bytes).
    """
    mode, chromium, _ = resolve(options.browser, options.chromium)
    if mode is BrowserMode.NEVER:
        return
    pages = archive.pages_to_render(mode is BrowserMode.ALWAYS, CHALLENGES, SHELL_WORDS)
    pages = [p for p in pages if needs_render(archive, p, mode)]
    if not pages:
        return
    renderer = _renderer(chromium, options, cookies, reach_of, pages)
    gates: dict[str, HostGate] = {}
    shared = asyncio.Semaphore(max(1, options.browser_tabs))  # the renderer has its own tab limit too
    loop = asyncio.get_running_loop()

    async def one(page: dict) -> None:
        host = (urlsplit(page["url"]).netloc or "").lower()
        reach = await page_reach(page["final_url"] or page["url"]) if page_reach else Reach.LOOPBACK
        reach = None if reach is Reach.LOOPBACK else reach  # a page on this machine may ask anything
        gate = gates.setdefault(host, HostGate(options.per_host, options.delay))
        async with gate.turn(shared) as turn:  # a render counts as one request to the page's host
            turn.started()
            rendered = await renderer.render(page["url"], reach)
        try:
            outcome, replaced = await _store(archive, writer, pool, loop, page, rendered, options.extract_timeout)
        except (asyncio.CancelledError, OSError, sqlite3.Error):
            raise  # a stop, or storage failing: the run ends with a clear message
        except Exception as exc:  # noqa: BLE001 - one page's render must never end the pass
            note = f"internal error while storing the render: {type(exc).__name__}: {str(exc)[:300]}"
            archive.record_render(page["url"], {"render_error": RenderError.FAILED, "render_note": note}, None, [])
            outcome, replaced = str(RenderError.FAILED), None
        progress[outcome] += 1
        if on_render:
            on_render(page["url"], outcome, replaced)

    tasks = [asyncio.create_task(one(page)) for page in pages]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await renderer.close()


def _renderer(chromium: str, options, cookies: CookieJar | None, reach_of: Callable[[str], Awaitable[object]] | None, pages: list[dict]) -> Renderer:
    headers = {k: v for k, v in options.headers.items() if k.lower() not in ("accept-encoding", "host", "cookie", "user-agent")}
    return Renderer(
        chromium,
        tabs=options.browser_tabs,
        timeout=options.timeout,
        user_agent=options.user_agent,
        headers=headers,
        cookies=list(cookies) if cookies else [],
        max_bytes=options.max_bytes,
        reach_of=reach_of,
        # the user's --header values, to the hosts of the pages rendered only (as the HTTP fetcher does)
        private_hosts=None if options.header_all_hosts else frozenset(urlsplit(p["url"]).hostname or "" for p in pages),
    )


async def _store(
    archive: Archive, writer: warc.CaptureWriter, pool, loop, page: dict, rendered: Rendered, extract_timeout: float | None = None
) -> tuple[str, PageStatus | None]:
    """Write the render to WARC, extract its DOM, record the outcome; returns it for the summary,
    with the page's new status when the browser's capture became the page's."""
    url = page["url"]
    captured, dom, values = _write(archive, writer, page, rendered)
    article = None
    if dom is not None:
        article = await _article(archive, pool, loop, url, rendered, dom, values, extract_timeout)
    wins = article is not None and (
        page["status"] == PageStatus.FAILED or (article.status == PageStatus.ARCHIVED and article.word_count > (page["word_count"] or 0))
    )
    if not wins:
        # a render the crash of the browser took down is tried again on the next run
        archive.record_render(url, values, None, [], done=rendered.error != RenderError.CRASH)
        return str(values["render_error"] or f"kept {CaptureKind.HTTP}"), None
    values |= {
        "status": article.status,
        "capture": CaptureKind.BROWSER,
        "http_status": rendered.status,
        "final_url": rendered.final_url,
        "content_type": "text/html; charset=utf-8",
        "fetched_at": now(),
        **warc_values(dom),
        "source": Source.LIVE,
        "error": None,
        "error_message": None,
    }
    recorded = archive.record_render(url, values, article, list(_images(article, captured)))
    return f"{recorded or article.status} from {CaptureKind.BROWSER}", recorded or PageStatus(article.status)


def _write(archive: Archive, writer: warc.CaptureWriter, page: dict, rendered: Rendered) -> tuple[dict, warc.WarcLocation | None, dict[str, object]]:
    """The render's responses, DOM and screenshots written to WARC (flushed before the database
    points at them): the responses by URL, the DOM's location, and the render's columns."""
    url = page["url"]
    http = warc_location(page) if page["status"] != PageStatus.FAILED else archive.last_capture(url)
    refers = warc.record_id(archive.path, http) if http else None
    source = page["final_url"] or url  # the URI of that HTTP capture
    items: list[warc.Capture | warc.Derived] = list(rendered.responses)
    derived = []
    if rendered.dom is not None:
        derived.append(warc.Derived(rendered.final_url, "text/html; charset=utf-8", rendered.dom, "conversion", refers, source))
    if rendered.screenshot is not None:
        derived.append(warc.Derived(f"urn:screenshot:{rendered.final_url}", "image/png", rendered.screenshot, "resource", refers, source))
    if rendered.full_screenshot is not None:
        derived.append(warc.Derived(f"urn:screenshot-full:{rendered.final_url}", "image/png", rendered.full_screenshot, "resource", refers, source))
    locations = writer.write_many(items + derived) if items or derived else []
    crash_point("render")
    captured = dict(zip([c.url for c in rendered.responses], zip(rendered.responses, locations, strict=False), strict=False))
    extra = iter(locations[len(items):])
    dom = next(extra) if rendered.dom is not None else None
    shots = [next(extra) if rendered.screenshot is not None else None, next(extra) if rendered.full_screenshot is not None else None]
    values: dict[str, object] = {"render_error": rendered.error, "render_note": "; ".join(rendered.notes) or None}
    if shots[0] is not None:
        full = warc_values(shots[1], "full_screenshot_")  # in the first screen's file: no file column of its own
        values |= warc_values(shots[0], "screenshot_") | {k: v for k, v in full.items() if not k.endswith("_file")}
    return captured, dom, values


async def _article(archive: Archive, pool, loop, url: str, rendered: Rendered, dom: warc.WarcLocation, values: dict[str, object],
                   extract_timeout: float | None) -> Extraction | None:
    """The rendered DOM's article, unless the page is still blocked; notes go into `values`."""
    article = None
    still = blocked_reason(rendered.status or 200, rendered.final_url, url, rendered.dom[:65536].decode("utf-8", "replace"))
    if still:
        values |= {"render_error": RenderError.BLOCKED, "render_note": _join(rendered.notes, f"still blocked after rendering: {still}")}
    else:
        try:
            article = await loop.run_in_executor(pool, safe_extract, str(archive.path), dom, rendered.final_url, False, extract_timeout)
        except Exception as exc:  # noqa: BLE001 - a failed extraction keeps the HTTP outcome
            values["render_note"] = _join(rendered.notes, f"extraction of the rendered page failed: {exc}")
        if article is not None and article.note:
            values["render_note"] = _join(rendered.notes, article.note)
    return article


def _images(article: Extraction, captured: dict) -> Iterable[Exchange]:
    """The article's images that the browser received, as captures for the resources table."""
    for image in article.images:
        if image in captured:
            capture, location = captured[image]
            content_type = next((v for k, v in capture.response_headers if k.lower() == "content-type"), None)
            if 200 <= capture.status < 300 and (content_type or "").startswith("image/"):
                yield Exchange(url=image, final_url=image, status=capture.status, content_type=content_type, location=location)


def _join(notes: list[str], more: str) -> str:
    return "; ".join([*notes, more])
