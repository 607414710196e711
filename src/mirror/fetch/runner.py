"""Polite, concurrent, resumable fetching of every pending page into WARC.

`run` picks the pages to fetch from the archive, fetches them with retries,
glued-URL repairs and an optional Wayback fallback, and records each page as
soon as it is done, so an interrupted run loses nothing it finished. A page whose
capture shows that its article needs JavaScript is rendered in chromium from that
capture as soon as it is extracted, while the other pages are fetched (`render`),
and recorded once, with whichever article is better.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.parse import urlsplit

from .. import warc
from .._types import (
    BrowserMode,
    CaptureKind,
    Exchange,
    Extraction,
    Outcome,
    PageResult,
    PageStatus,
    PageToFetch,
    Reason,
    Render,
    RenderError,
    Source,
    VersionState,
)
from .._util.faults import crash_point
from .._util.text import count
from ..browser.decide import THIN_WORDS
from ..browser.renderer import resolve
from ..check import soft404
from ..extract.pool import StoppableExecutor, in_pool, safe_extract
from ..http.gate import Budget
from ..store import Archive
from ..store.queries import warc_location
from . import requisites
from .engine import LOCAL, Engine
from .options import FetchOptions, run_cookies
from .pages import fetch_page, internal_failure, page_reach
from .recovery import recover
from .render import Renders, http_article
from .resources import MAX_IMAGES, Seen, fetch_images, resources_tail
from .summary import Summary, outcome_of

__all__ = ["run"]

PageHook = Callable[[PageResult, Summary], None]
RenderHook = Callable[[str, str, Summary], None]
TailHook = Callable[[Summary], None]


def run(
    archive: Archive,
    options: FetchOptions,
    on_page: PageHook | None = None,
    on_start: Callable[[Summary], None] | None = None,
    on_render: RenderHook | None = None,
    only: Iterable[str] | None = None,
    pool: Executor | None = None,
    on_tail: TailHook | None = None,
    engine: Engine = LOCAL,
) -> Summary:
    """Fetch the archive's pending pages (more with retry_failed / refresh): those among
    `only` (the pages the sources given link), else those some reading list links. `engine`
    says where the requests and extractions are carried out (`fetch.engine`: here, or a cluster).
    `on_tail` is told when every page is recorded and their resources are still being fetched.

    Extractions run in `pool` when one is given (`extract.pool.extraction_pool`, say: a caller
    that starts many runs, such as the tests, starts its workers once, where each run would
    spawn its own and import trafilatura in each, ~1 s); the caller keeps it and shuts it down.
    Without one the run makes its own (`engine.pool`: `options.workers` processes here).

    The caller holds the archive lock. Raises KeyboardInterrupt after a clean
    stop on Ctrl-C; everything finished before it is committed. A run that finds the network
    down leaves the pages it could not look up pending (`Summary.left_pending`).
    """
    cookies = run_cookies(options)
    summary = Summary()
    suspects = archive.unclosed_warcs()
    summary.repaired_warcs = [f"{p.name} (-{count(n, 'byte')})" for p, n in archive.repair_warcs(suspects)]
    only = None if only is None else set(only)
    pages = archive.pages_to_fetch(retry_failed=options.retry_failed, refresh=options.refresh, only=only)
    summary.total = len(pages)
    # what a crashed run captured is recorded whichever lists this run reads (its files are closed after)
    recoverable = archive.pages_to_fetch(retry_failed=options.retry_failed, refresh=options.refresh) if suspects and only is not None else pages
    missing_images = archive.pages_missing_images(only) if options.images else []
    summary.images_resumed = sum(m.unfinished for m in missing_images)
    summary.deferred_due = sum(m.due for m in missing_images)
    if on_start:
        on_start(summary)
    started = time.monotonic()
    try:
        hooks = (on_page, on_render, on_tail)
        fetching = _fetch_all(archive, options, cookies, summary, pages, hooks, suspects, recoverable, missing_images, only, pool, engine)
        asyncio.run(fetching)
    finally:
        summary.elapsed = time.monotonic() - started
    return summary


async def _fetch_all(archive, options, cookies, summary, pages, hooks, suspects, recoverable, missing_images, only, pool, engine) -> None:
    """The run's client, writer and pool are made inside the event loop that uses them."""
    await _Run(archive, options, cookies, summary, pages, *hooks, only=only, pool=pool, engine=engine).all(suspects, recoverable, missing_images)


class _Run:
    """One run's fetch: its client, writer and extraction pool, and what it has counted so far."""

    def __init__(
        self,
        archive: Archive,
        options: FetchOptions,
        cookies: CookieJar | None,
        summary: Summary,
        pages: list[PageToFetch],
        on_page: PageHook | None,
        on_render: RenderHook | None,
        on_tail: TailHook | None = None,
        *,
        only: set[str] | None = None,
        pool: Executor | None = None,
        engine: Engine = LOCAL,
    ):
        self.archive, self.options, self.cookies, self.summary, self.pages = archive, options, cookies, summary, pages
        self.on_page, self.on_render, self.on_tail, self.only = on_page, on_render, on_tail, only
        self.folder = archive.path.absolute()  # (a cluster's workers, or a pool the caller gave, do not start where this process did)
        self.own_pool: StoppableExecutor | None = None  # (a pool the caller gave stays the caller's to stop)
        if pool is None:
            pool = self.own_pool = engine.pool(options.workers)
        self.pool: Executor = pool
        self.writer = engine.writer(self.folder, options.warc_rotate_bytes, info=options.warcinfo())
        self.client = engine.client(self.writer, pages, _client_settings(options, cookies, pages, archive))
        summary.in_flight = self.client.in_flight  # the progress display shows the slowest
        self.resources = Budget(
            timeout=min(options.timeout, options.resource_timeout),
            retries=min(options.retries, options.resource_retries),
            concurrency=options.resource_concurrency or options.concurrency,
            backoff=min(options.backoff, 1.0),
        )
        self.page_tasks: list[asyncio.Task] = []
        self.image_tasks: list[asyncio.Task] = []
        self.untried: dict[str, str] = {}  # pages never captured that failed on a lookup or a route -> why
        self.unreached_resources: list[tuple[str, str]] = []  # (page, resource) recorded failed on a lookup or a route
        self.counted: dict[str, Outcome] = {}  # this run's pages, as counted in the summary
        self.seen = Seen(archive.archived_resource_urls() if options.images else set())
        self.probes: dict[str, asyncio.Future[soft404.Probe]] = {}  # server -> its answer for a path that cannot exist
        self.renders = _renders(self, cookies)

    async def all(self, suspects: list[Path], recoverable: list[PageToFetch], missing_images: list) -> None:
        """Recover, fetch every page, finish their resources, render; whatever ends it, end cleanly."""
        finished = False
        try:
            recovered = await self.recovered(suspects, recoverable)
            if self.options.check:  # each host's probe first at its gate: no page waits behind its host's other pages for it
                for page in self.pages:
                    self.probe_soon(page.final_url or page.url)
            self.page_tasks += [asyncio.create_task(self.page(page)) for page in self.pages if page.url not in recovered]
            self.record_recovered(recoverable, recovered)
            if self.renders is not None:  # saved captures a run without a browser made, that need one
                always = self.renders.mode is BrowserMode.ALWAYS
                fetching = {page.url for page in self.pages} | set(recovered)
                self.page_tasks += [
                    asyncio.create_task(self.render_saved(row))
                    for row in self.archive.pages_to_render(always, THIN_WORDS, self.only)
                    if row["url"] not in fetching
                ]
            # images an interrupted run did not finish, or that a re-extraction found
            self.image_tasks.extend(
                asyncio.create_task(self.page_resources(m.url, m.final_url, m.images, m.stylesheets, m.settled)) for m in missing_images
            )
            await asyncio.gather(*self.page_tasks)
            if self.on_tail and self.summary.total and any(not task.done() for task in self.image_tasks):
                self.on_tail(self.summary)
            grace = min(self.options.tail_grace, self.resources.timeout)
            self.summary.tail_seconds = await resources_tail(self.client, self.image_tasks, self.page_tasks, grace)
            finished = True
        finally:
            await self.stop_tasks()
            if self.renders is not None:
                await self.renders.close()
            self.record_the_network()
            if self.own_pool is not None:
                if not finished:  # stopped: what the workers are extracting would not be recorded (the next run recovers it)
                    self.own_pool.kill_workers()
                self.own_pool.shutdown(wait=True, cancel_futures=True)  # workers are reaped: their CPU counts as ours
            await self.client.aclose()
            if finished:  # else the next run checks the files and recovers what they hold
                self.close_warcs()

    async def recovered(self, suspects: list[Path], recoverable: list[PageToFetch]) -> dict[str, tuple[PageResult, Extraction | None]]:
        """What a crashed run captured but never recorded, by page."""
        found = await recover(self.archive, suspects, recoverable, self.extract)
        self.archive.mark_warcs_closed([p.name for p in suspects])
        return {page.url: (PageResult(page.url, final, [final]), article) for page, final, article in found}

    def record_recovered(self, recoverable: list[PageToFetch], recovered: dict[str, tuple[PageResult, Extraction | None]]) -> None:
        wanted = {page.url for page in self.pages}
        self.summary.total += sum(1 for url in recovered if url not in wanted)  # other lists' pages a crashed run had fetched
        for page in recoverable:
            if page.url in recovered:
                result, article = recovered[page.url]
                if article is not None:  # (a soft 404 a killed run captured is one still; no probe here)
                    reason = soft404.verdict(result.url, result.final.final_url, article.title, article.text, article.word_count)
                    if reason is not None:
                        result.final.error, result.final.message, article = Reason.SOFT_404, f"soft 404: {reason}", None
                self.page_tasks.append(asyncio.create_task(self.finish(page, result, article)))
                self.summary.recovered += 1

    async def extract(self, location: warc.WarcLocation, url: str) -> Extraction:
        """The article of a capture, extracted in another process while fetching goes on here
        (the archive named by its absolute path: a pool the caller gave may run in another folder)."""
        o = self.options
        return await in_pool(self.pool, safe_extract, str(self.folder), location, url, o.images, o.extract_timeout)

    async def page(self, page: PageToFetch) -> None:
        try:
            result = await fetch_page(self.client, page, self.options)
            article = None
            crash_point("capture")
            if result.ok and result.final.status != 304 and result.final.location and not result.final.revisit:
                pending = self.extract(result.final.location, result.final.final_url)
                crash_point("extract")
                article = await pending
                article = await self.unless_soft_404(result, article)
        except (asyncio.CancelledError, OSError, sqlite3.Error):
            raise  # a stop, or storage failing: the run ends with a clear message
        except Exception as exc:  # noqa: BLE001 - one page must never end the run
            result, article = internal_failure(page.url, exc), None
        await self.finish(page, result, article)

    async def finish(self, page: PageToFetch, result: PageResult, article: Extraction | None) -> None:
        """Render the page if its capture needs a browser, then record it once, with the better article."""
        if self.renders is not None:
            try:
                article = await self.rendered(page, result, article)
            except (asyncio.CancelledError, OSError, sqlite3.Error):
                raise
            except Exception as exc:  # noqa: BLE001 - a render never costs the page its HTTP capture
                result.render = Render(
                    final_url=result.final.final_url,
                    error=RenderError.FAILED,
                    note=f"internal error while rendering: {type(exc).__name__}: {str(exc)[:300]}",
                )
        self.done(page, result, article)

    async def rendered(self, page: PageToFetch, result: PageResult, article: Extraction | None) -> Extraction | None:
        """The page's article after its render, when its capture shows the browser can improve it
        (or its saved copy is a render: a re-check renders it again); `result.render` says how it went."""
        final, renders = result.final, self.renders
        blocked = final.message if final.error == Reason.BLOCKED else None
        if renders is None or result.source != Source.LIVE or final.location is None or final.revisit or not (final.status == 200 or blocked):
            return article
        if page.captured_by == CaptureKind.BROWSER and final.ok:
            why: str | None = "its saved copy is a render"
        else:
            why = await renders.reason(final.location, article, blocked, page.render_gain, page.render_basis)
        if why is None:
            return article
        reach = await page_reach(self.client, final.final_url, self.options)
        render = result.render = await renders.render(page.url, final, article, reach)
        if not render.won:
            return article
        if blocked:  # the browser got past the challenge: the page is its render (the attempts keep what the server said)
            result.final = dataclasses.replace(final, status=render.status or 200, error=None, message=None)
        return render.article

    async def unless_soft_404(self, result: PageResult, article: Extraction) -> Extraction | None:
        """The article, or None when the answer is a soft 404 (the page then fails with its reason).
        A check also asks the host for a path that cannot exist, once (`soft404`)."""
        final = result.final
        live = result.source == Source.LIVE  # (the Wayback Machine's answer for a path that cannot exist says nothing of the site)
        if blocked := soft404.sign_in(result.url, final.final_url, article.title, article.text, article.word_count):
            final.error, final.message = Reason.BLOCKED, blocked  # a sign-in form is no soft 404: the article may be there still
            return None
        probe = await self.probe(final.final_url) if self.options.check and final.status == 200 and live else None
        reason = soft404.verdict(result.url, final.final_url, article.title, article.text, article.word_count, probe)
        if reason is None:
            return article
        final.error, final.message = Reason.SOFT_404, f"soft 404: {reason}"
        return None

    def probe_soon(self, url: str) -> asyncio.Future[soft404.Probe]:
        """The probe of `url`'s server, started if it was not: once a run."""
        parts = urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc.lower()}"
        if key not in self.probes:
            self.probes[key] = asyncio.ensure_future(self._probe(url))
        return self.probes[key]

    async def probe(self, url: str) -> soft404.Probe | None:
        """What `url`'s server answers for a path that cannot exist."""
        try:
            return await asyncio.shield(self.probe_soon(url))
        except (OSError, sqlite3.Error):
            raise
        except Exception:  # noqa: BLE001 - no probe is no evidence
            return None

    async def _probe(self, url: str) -> soft404.Probe:
        answer = await self.client.get(soft404.probe_url(url), same_reach=not self.options.allow_private)
        text = None
        if answer.ok and answer.status == 200 and answer.location:
            text = (await self.extract(answer.location, answer.final_url)).text
        return soft404.Probe(answer.status, answer.final_url, text)

    def done(self, page: PageToFetch, result: PageResult, article: Extraction | None) -> None:
        """Record a page's fetch (and render), count it, and start on its resources."""
        recorded = self.archive.record_fetch(result, had_capture=page.has_capture, extraction=article)
        if (result.final.error == Reason.DNS or result.final.unreached) and not page.has_capture:
            self.untried[page.url] = result.final.error or ""  # pending again if the run finds the network down
        result.extraction = article
        self.count(page, result, PageStatus.DUPLICATE if recorded == PageStatus.DUPLICATE else None)
        if result.render is not None:
            self.count_render(page.url, result.render, recorded or (PageStatus(article.status) if result.render.won and article else None))
        if self.on_page:
            self.on_page(result, self.summary)
        if self.options.images and article is not None and recorded == PageStatus.ARCHIVED:
            # in a task of its own: a page's status never waits for its images
            task = self.page_resources(page.url, result.final.final_url, article.images, article.stylesheets)
            self.image_tasks.append(asyncio.create_task(task))
        elif self.options.images and self.options.refresh and not self.options.check and result.version == VersionState.SAME:
            # --refresh asks again for what an unchanged page's images lacked (a weekly check does not: a 404 stays one)
            retry = self.archive.failed_resources_of(page.url)
            if retry is not None:
                self.image_tasks.append(asyncio.create_task(self.page_resources(*retry)))

    def count(self, page: PageToFetch, result: PageResult, recorded: PageStatus | None) -> None:
        summary = self.summary
        summary.done += 1
        outcome = Outcome.DUPLICATE if recorded == PageStatus.DUPLICATE else outcome_of(result, page)
        summary.statuses[outcome] += 1
        if result.version is not None:
            summary.versions[result.version] += 1
        self.counted[page.url] = outcome
        self.changed_by_others()
        if not result.ok:
            summary.errors[result.final.error or "unknown"] += 1
            host = urlsplit(result.final.final_url).netloc.lower()  # the hop that failed
            if host in self.client.down:
                summary.count_down_host(host, self.client.down[host].error or "")
        summary.host_seconds[urlsplit(page.url).netloc].append(result.final.server_seconds)

    def changed_by_others(self) -> None:
        """Pages of this run that a later page made a duplicate (it is their article's own address),
        or made the original again (theirs stopped being an article): counted as they now are."""
        for urls, now in ((self.archive.adopted, Outcome.DUPLICATE), (self.archive.released, Outcome.ARCHIVED)):
            for url in urls:
                if url in self.counted and self.counted[url] != now:
                    self.summary.recount(self.counted[url], None, now)
                    self.counted[url] = now
            urls.clear()

    async def page_resources(
        self, url: str, final_url: str, found: list[str], stylesheets: list[str] | None = None, settled: frozenset[str] = frozenset()
    ) -> None:
        """A page's images and what its stylesheets load (but those `settled` for it by an earlier
        run: fetched, or failed), recorded together at the end."""
        fetched: dict[str, Exchange] = {}
        archive = self.archive
        try:
            reach = await page_reach(self.client, final_url, self.options)

            async def fetch(urls: list[str]) -> None:
                asked = [u for u in urls if u not in settled]
                for exchange in await fetch_images(self.client, self.resources, asked, reach, self.seen, self.summary.resources):
                    fetched[exchange.url] = exchange

            async def stylesheet(css: str) -> str | None:
                exchange = fetched.get(css)
                if exchange is None:  # archived before, for another page
                    return await requisites.captured_css(archive.path, archive.db, css)
                return await requisites.css_text(archive.path, exchange.location, exchange.content_type, css) if exchange.ok else None

            wanted = list(dict.fromkeys(found))
            for extra in wanted[MAX_IMAGES:]:  # a thousand hosts for one page would hold a thousand sockets
                if extra not in self.seen.archived and extra not in settled:
                    fetched[extra] = Exchange(
                        url=extra,
                        final_url=extra,
                        error=Reason.TOO_MANY,
                        message=f"the page shows more than {MAX_IMAGES} images: the rest are not fetched",
                    )
            await fetch(wanted[:MAX_IMAGES])
            if stylesheets:  # and what they load, so that the snapshot looks like the page
                await requisites.capture(stylesheets, fetch, stylesheet)
        except (asyncio.CancelledError, OSError, sqlite3.Error):
            raise
        except Exception:  # noqa: BLE001 - images are best effort; the page is saved
            pass
        unreached = [exchange for exchange in fetched.values() if exchange.unreached]
        for exchange in unreached if self.client.offline else ():  # the machine's state, not the hosts': asked again later
            exchange.error = Reason.DEFERRED
        if not self.client.offline:  # (deferred at the run's end if it finds itself offline after all)
            self.unreached_resources += [(url, exchange.url) for exchange in unreached]
        self.summary.deferred += archive.record_resources(url, list(fetched.values()))

    async def render_saved(self, row: dict) -> None:
        """Render a saved capture that a run without a browser made, if it needs one, and record how it went."""
        url, renders = row["url"], self.renders
        if renders is None:  # (a run without a browser renders nothing)
            return
        location = warc_location(row) or self.archive.last_capture(url)
        blocked = row["error_message"] if row["error"] == Reason.BLOCKED else None
        http = http_article(row)
        why = await renders.reason(location, http, blocked)
        if why is None:
            return
        final_url = row["final_url"] or url
        capture = Exchange(url=url, final_url=final_url, status=row["http_status"], location=location)
        render = await renders.render(url, capture, http, await page_reach(self.client, final_url, self.options))
        status = self.archive.record_render(url, render)
        self.count_render(url, render, status)

    def count_render(self, url: str, render: Render, status: PageStatus | None) -> None:
        """A render's outcome in the summary (a challenge the browser got past counts as archived),
        and its images, stylesheets and fonts as the page's resources (not asked for again)."""
        if render.resources:
            self.archive.record_resources(url, render.resources, done=False)
            self.seen.archived.update(exchange.url for exchange in render.resources)
        outcome = str(render.error or (f"{status} from {CaptureKind.BROWSER}" if render.won else f"kept {CaptureKind.HTTP}"))
        self.summary.rendered[outcome] += 1
        self.changed_by_others()
        if self.on_render:
            self.on_render(url, outcome, self.summary)

    async def stop_tasks(self) -> None:
        tasks = self.page_tasks + self.image_tasks + list(self.probes.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def record_the_network(self) -> None:
        """What the run learnt of the network: pages never really tried (the machine was offline:
        lookups without an answer, no route, or "no such name" for every name, as some resolvers
        say offline) go back to pending and are counted so; names that do not exist are remembered,
        once the resolver has shown it works. A failing database here loses only that."""
        client, summary, archive = self.client, self.summary, self.archive
        summary.no_host_resolved = client.health.looks_offline()
        if summary.no_host_resolved:
            try:
                reset = archive.reset_pending(list(self.untried))
            except sqlite3.Error:
                reset = []
            for url in reset:
                if url in self.counted:  # the summary tells what the archive now holds: pending, not failed
                    summary.recount(self.counted[url], self.untried[url] or None, Outcome.LEFT_PENDING)
                    self.counted[url] = Outcome.LEFT_PENDING
            summary.left_pending = len(reset)
        if summary.no_host_resolved and self.unreached_resources:
            try:
                summary.deferred += archive.defer_resources(self.unreached_resources)
            except sqlite3.Error:
                pass
        try:
            if client.network_works:  # (offline, a resolver may say "no such name" to everything)
                archive.record_dead_names(client.nxdomain)
        except sqlite3.Error:
            pass

    def close_warcs(self) -> None:
        try:  # on a full disk these fail too; the next run then checks the files itself
            self.writer.close()
            self.archive.mark_warcs_closed([f for f in self.writer.opened if f not in self.writer.unfinished])
        except (OSError, sqlite3.Error):
            pass


def _renders(run: _Run, cookies: CookieJar | None) -> Renders | None:
    """The run's browser, when its options ask for one and a chromium is there (else None: HTTP only)."""
    options = run.options
    mode, chromium, _ = resolve(options.browser, options.chromium)
    if mode is BrowserMode.NEVER:
        return None
    options = dataclasses.replace(options, browser=mode, chromium=chromium)
    return Renders(run.archive, run.writer, run.client, run.resources, run.seen, options, cookies, run.extract)


def _client_settings(options: FetchOptions, cookies: CookieJar | None, pages: list[PageToFetch], archive: Archive) -> dict:
    """The run's `Client` keywords, but its writer."""
    return dict(
        concurrency=options.concurrency,
        per_host=options.per_host,
        delay=options.delay,
        timeout=options.timeout,
        max_bytes=options.max_bytes,
        max_redirects=options.max_redirects,
        headers={"User-Agent": options.user_agent, "Accept-Encoding": "gzip, deflate"},
        private_headers=options.headers,
        private_hosts=None if options.header_all_hosts else frozenset(urlsplit(p.url).hostname or "" for p in pages),
        cookies=cookies,
        dead_names=None if options.refresh else archive.dead_names(),
        look_ahead=options.images,  # the names its images are on, while a page is extracted
        revisits={p.url: (p.final_url or p.url, p.capture) for p in pages if p.capture} if options.refresh else None,
    )
