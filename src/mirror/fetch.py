"""Polite, concurrent, resumable fetching of every pending page into WARC.

`run` picks the pages to fetch from the archive, fetches them with retries,
glued-URL repairs and an optional Wayback fallback, and records each page as
soon as it is done, so an interrupted run loses nothing it finished.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sqlite3
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http.cookiejar import LoadError, MozillaCookieJar
from pathlib import Path
from urllib.parse import quote, urlsplit

from . import requisites, warc
from ._client import Budget, Client, Reach, backoff_delay
from ._faults import crash_point
from .browser import render_pass
from ._pool import EXTRACT_TIMEOUT, extraction_pool, safe_extract
from ._types import Exchange, Extraction, Outcome, PageResult, PageStatus, PageToFetch, Reason, Source
from .recovery import recover
from .store import Archive

__all__ = ["DEFAULT_USER_AGENT", "FetchError", "FetchOptions", "PageResult", "Summary", "load_cookies", "run"]

MAX_IMAGES = 300  # fetched for one page (a page of real galleries shows a few dozen)
DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0 Safari/537.36 mirror/0.1 (personal archiver)"
)


class FetchError(Exception):
    """The run cannot start: the cookies file cannot be read or is not a cookies.txt.
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
    retry_failed: bool = False
    refresh: bool = False
    wayback: bool = False
    wayback_api: str = "https://archive.org"
    warc_rotate_bytes: int = warc.DEFAULT_ROTATE_BYTES
    images: bool = True  # fetch the images an extracted article shows
    workers: int | None = None  # extraction processes (default: one per core)
    browser: str = "never"  # auto, always or never: see mirror.browser (the CLI defaults to auto)
    chromium: str | None = None  # default: MIRROR_CHROMIUM, else chromium on the PATH
    browser_tabs: int = 2  # pages rendered at once
    allow_private: bool = False  # resources may come from private/loopback addresses whatever the page's
    header_all_hosts: bool = False  # send `headers` everywhere, not only to the seed URLs' hosts
    resource_retries: int = 1  # images get their own, smaller budget: they never hold up a page
    resource_timeout: float = 10.0
    resource_concurrency: int | None = None  # default: the same as `concurrency`, in slots of their own
    extract_timeout: float = EXTRACT_TIMEOUT  # seconds for a page's extraction; past it, its plain text
    tail_grace: float = 1.5  # seconds the resources get once every page is recorded, before unanswered lookups are deferred


SLOW_HOST = 1.0  # seconds a host's pages take on average before the summary lists it as slow


@dataclass
class Summary:
    total: int = 0
    done: int = 0
    statuses: Counter = field(default_factory=Counter)  # archived / unchanged / failed / gone
    errors: Counter = field(default_factory=Counter)
    host_seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    elapsed: float = 0.0
    repaired_warcs: list[str] = field(default_factory=list)
    rendered: Counter = field(default_factory=Counter)  # browser pass outcomes
    recovered: int = 0  # pages saved from responses a crashed run had written but not recorded
    down_hosts: dict[str, tuple[str, int]] = field(default_factory=dict)  # host -> (reason, pages it took down)
    no_host_resolved: bool = False  # every failure was DNS and nothing answered: offline?
    left_pending: int = 0  # pages not tried for good because the network was down: the next run tries them
    images_resumed: int = 0  # archived pages whose images this run fetches (after a reindex or an interruption)
    tail_seconds: float = 0.0  # from the last page recorded to the end of its resources
    deferred: int = 0  # resources whose host name had no answer when the run ended (the next run asks)
    in_flight: dict[str, float] = field(default_factory=dict, repr=False)  # page requests under way -> monotonic start

    def count_down_host(self, host: str, reason: str) -> None:
        self.down_hosts[host] = (reason, self.down_hosts.get(host, (reason, 0))[1] + 1)

    def slowest_hosts(self, n: int = 5) -> list[tuple[str, float, int]]:
        """Hosts whose pages took SLOW_HOST seconds or more on average (the servers' time, not
        our politeness waits), slowest first."""
        means = [(h, sum(t) / len(t), len(t)) for h, t in self.host_seconds.items() if t and h.lower() not in self.down_hosts]
        return sorted((m for m in means if m[1] >= SLOW_HOST), key=lambda x: -x[1])[:n]

    def as_dict(self) -> dict:
        return {
            "total": self.total,
            "done": self.done,
            "statuses": dict(self.statuses),
            "errors": dict(self.errors),
            "slowest_hosts": [{"host": h, "mean_seconds": round(s, 3), "pages": n} for h, s, n in self.slowest_hosts()],
            "elapsed_seconds": round(self.elapsed, 3),
            "repaired_warcs": self.repaired_warcs,
            "rendered": dict(self.rendered),
            "recovered": self.recovered,
            "down_hosts": [{"host": h, "reason": r, "pages": n} for h, (r, n) in sorted(self.down_hosts.items())],
            "no_host_resolved": self.no_host_resolved,
            "left_pending": self.left_pending,
            "images_resumed": self.images_resumed,
            "tail_seconds": round(self.tail_seconds, 3),
            "deferred": self.deferred,
        }


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


def run(
    archive: Archive,
    options: FetchOptions,
    on_page: Callable[[PageResult, Summary], None] | None = None,
    on_start: Callable[[Summary], None] | None = None,
    on_render: Callable[[str, str, Summary], None] | None = None,
    only: Iterable[str] | None = None,
) -> Summary:
    """Fetch the archive's pending pages (more with retry_failed / refresh): those among
    `only` (the pages the sources given link), else those some reading list links.

    The caller holds the archive lock. Raises KeyboardInterrupt after a clean
    stop on Ctrl-C; everything finished before it is committed. A run that finds the network
    down leaves the pages it could not look up pending (`Summary.left_pending`).
    """
    cookies = load_cookies(options.cookies) if options.cookies else None
    summary = Summary()
    suspects = archive.unclosed_warcs()
    summary.repaired_warcs = [f"{p.name} (-{n} bytes)" for p, n in archive.repair_warcs(suspects)]
    only = None if only is None else set(only)
    pages = archive.pages_to_fetch(retry_failed=options.retry_failed, refresh=options.refresh, only=only)
    summary.total = len(pages)
    # what a crashed run captured is recorded whichever lists this run reads (its files are closed after)
    recoverable = archive.pages_to_fetch(retry_failed=options.retry_failed, refresh=options.refresh) if suspects and only is not None else pages
    missing_images = archive.pages_missing_images(only) if options.images else []
    summary.images_resumed = len(missing_images)
    if on_start:
        on_start(summary)
    started = time.monotonic()
    try:
        asyncio.run(_fetch_all(archive, options, pages, cookies, summary, on_page, suspects, on_render, missing_images, recoverable))
    finally:
        summary.elapsed = time.monotonic() - started
    return summary


async def _fetch_all(archive, options, pages, cookies, summary, on_page, suspects, on_render=None, missing_images=(), recoverable=None) -> None:
    loop = asyncio.get_running_loop()
    pool = extraction_pool(options.workers)
    writer = warc.CaptureWriter(archive.path, rotate_bytes=options.warc_rotate_bytes)
    client = Client(
        writer,
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
    )
    summary.in_flight = client.in_flight  # the progress display shows the slowest
    resources = Budget(
        timeout=min(options.timeout, options.resource_timeout),
        retries=min(options.retries, options.resource_retries),
        concurrency=options.resource_concurrency or options.concurrency,
        backoff=min(options.backoff, 1.0),
    )
    image_tasks: list[asyncio.Task] = []
    unresolved: list[str] = []  # pages whose host name did not resolve in this run
    not_archived: dict[str, tuple[Outcome, str | None]] = {}  # this run's counts the browser pass may change
    counted: dict[str, Outcome] = {}  # this run's pages, as counted in the summary
    seen = Seen(archive.archived_resource_urls() if options.images else set())

    async def extract(location: warc.WarcLocation, url: str) -> Extraction:
        return await loop.run_in_executor(pool, safe_extract, str(archive.path), location, url, options.images, options.extract_timeout)

    async def one(page: PageToFetch) -> None:
        try:
            result = await fetch_page(client, page, options)
            article = None
            crash_point("capture")
            if result.ok and result.final.status != 304 and result.final.location:
                # extraction runs in another process while fetching goes on here
                pending = extract(result.final.location, result.final.final_url)
                crash_point("extract")
                article = await pending
        except (asyncio.CancelledError, OSError, sqlite3.Error):
            raise  # a stop, or storage failing: the run ends with a clear message
        except Exception as exc:  # noqa: BLE001 - one page must never end the run
            result, article = _internal_failure(page.url, exc), None
        done(page, result, article)

    def done(page: PageToFetch, result: PageResult, article: Extraction | None) -> None:
        recorded = archive.record_fetch(result, had_capture=page.has_capture, extraction=article)
        if result.final.error == Reason.DNS and not page.has_capture:
            unresolved.append(page.url)  # pending again if the run finds the network down
        result.extraction = article
        summary.done += 1
        outcome = Outcome.DUPLICATE if recorded == PageStatus.DUPLICATE else _outcome(result, page)
        summary.statuses[outcome] += 1
        counted[page.url] = outcome
        _changed_by_others(archive, counted, summary)
        if outcome != Outcome.ARCHIVED:
            not_archived[page.url] = (outcome, None if result.ok else result.final.error or "unknown")
        if not result.ok:
            summary.errors[result.final.error or "unknown"] += 1
            host = urlsplit(result.final.final_url).netloc.lower()  # the hop that failed
            if host in client.down:
                summary.count_down_host(host, client.down[host].error or "")
        summary.host_seconds[urlsplit(page.url).netloc].append(result.final.server_seconds)
        if on_page:
            on_page(result, summary)
        if options.images and article is not None and recorded == PageStatus.ARCHIVED:
            # in a task of its own: a page's status never waits for its images
            image_tasks.append(asyncio.create_task(images(page.url, result.final.final_url, article.images, article.stylesheets)))

    async def images(url: str, final_url: str, found: list[str], stylesheets: list[str] | None = None) -> None:
        fetched: dict[str, Exchange] = {}  # this page's resources, recorded together at the end
        try:
            reach = await _page_reach(client, final_url, options)

            async def fetch(urls: list[str]) -> None:
                for exchange in await fetch_images(client, resources, urls, reach, seen):
                    fetched[exchange.url] = exchange

            async def stylesheet(css: str) -> str | None:
                exchange = fetched.get(css)
                if exchange is None:  # archived before, for another page
                    return await requisites.captured_css(archive.path, archive.db, css)
                return await requisites.css_text(archive.path, exchange.location, exchange.content_type, css) if exchange.ok else None

            wanted = list(dict.fromkeys(found))
            for extra in wanted[MAX_IMAGES:]:  # a thousand hosts for one page would hold a thousand sockets
                if extra not in seen.archived:
                    fetched[extra] = Exchange(url=extra, final_url=extra, error=Reason.TOO_MANY,
                                              message=f"the page shows more than {MAX_IMAGES} images: the rest are not fetched")
            await fetch(wanted[:MAX_IMAGES])
            if stylesheets:  # and what they load, so that the snapshot looks like the page
                await requisites.capture(stylesheets, fetch, stylesheet)
        except (asyncio.CancelledError, OSError, sqlite3.Error):
            raise
        except Exception:  # noqa: BLE001 - images are best effort; the page is saved
            pass
        archive.record_resources(url, list(fetched.values()))

    finished = False
    tasks: list[asyncio.Task] = []
    try:
        recoverable = pages if recoverable is None else recoverable
        found = await recover(archive, suspects, recoverable, extract)
        recovered = {page.url: (PageResult(page.url, final, [final]), article) for page, final, article in found}
        archive.mark_warcs_closed([p.name for p in suspects])
        tasks += [asyncio.create_task(one(page)) for page in pages if page.url not in recovered]
        wanted = {page.url for page in pages}
        summary.total += sum(1 for url in recovered if url not in wanted)  # other lists' pages a crashed run had fetched
        for page in recoverable:
            if page.url in recovered:
                done(page, *recovered[page.url])
                summary.recovered += 1
        # images an interrupted run did not finish, or that a re-extraction found
        image_tasks.extend(asyncio.create_task(images(u, f, i, s)) for u, f, i, s in missing_images)
        await asyncio.gather(*tasks)
        await _resources_tail(client, image_tasks, tasks, min(options.tail_grace, resources.timeout), summary)
        if options.browser != "never":  # pages that need JavaScript, after every HTTP capture
            def rendered(url: str, outcome: str, status: PageStatus | None) -> None:
                if status is not None and url in not_archived:  # a challenge the browser got past is archived
                    _recount(summary, *not_archived.pop(url), Outcome(status))
                    counted[url] = Outcome(status)
                _changed_by_others(archive, counted, summary)
                if on_render:
                    on_render(url, outcome, summary)

            await render_pass(archive, writer, pool, options, cookies, summary.rendered, rendered,
                              functools.partial(client.reach_of, resource=True), lambda url: _page_reach(client, url, options))
        finished = True
    finally:
        tasks += image_tasks
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        summary.no_host_resolved = not client.reached and summary.errors.get(Reason.DNS, 0) > 0
        if client.offline or summary.no_host_resolved:  # lookups failed (no answer, or "no such name" for
            # every name: some resolvers say so offline) and nothing was reached: those pages were never really tried
            try:
                summary.left_pending = archive.reset_pending(unresolved)
            except sqlite3.Error:
                pass
        summary.deferred = client.deferred
        try:
            if client.reached:  # (a resolver that says NXDOMAIN to everything while offline is not believed)
                archive.record_dead_names(client.nxdomain)
        except sqlite3.Error:
            pass
        pool.shutdown(wait=True, cancel_futures=True)  # workers are reaped: their CPU counts as ours
        await client.aclose()
        if finished:  # else the next run checks the files and recovers what they hold
            try:  # on a full disk these fail too; the next run then checks the files itself
                writer.close()
                archive.mark_warcs_closed([f for f in writer.opened if f not in writer.unfinished])
            except (OSError, sqlite3.Error):
                pass


async def _resources_tail(client: Client, image_tasks: list[asyncio.Task], done: list[asyncio.Task], grace: float, summary: Summary) -> None:
    """The pages are all recorded: their resources get `grace` seconds more; then the host names still waiting for an answer are given up (`deferred`: asked
    again by the next run), and the resources already under way finish. A resolver that drops
    queries never holds the end of a run for long. `summary.tail_seconds` is how long it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + grace
    while image_tasks:  # more are added while they run
        batch, image_tasks[:] = list(image_tasks), []
        done += batch
        _, pending = await asyncio.wait(batch, timeout=max(0.0, deadline - loop.time()))
        if pending:
            client.defer_lookups()
            await asyncio.gather(*pending)
    client.defer_lookups(False)  # the browser pass looks names up again (its address rule needs them)
    summary.tail_seconds = loop.time() - started


async def _page_reach(client: Client, final_url: str, options: FetchOptions) -> Reach:
    """How private the addresses a page's resources may come from are: no more than the page's own."""
    if options.allow_private:
        return Reach.LOOPBACK
    reach = await client.reach_of(final_url)
    return reach if isinstance(reach, Reach) else Reach.PUBLIC


def _changed_by_others(archive: Archive, counted: dict[str, Outcome], summary: Summary) -> None:
    """Pages of this run that a later page made a duplicate (it is their article's own address),
    or made the original again (theirs stopped being an article): counted as they now are."""
    for urls, now in ((archive.adopted, Outcome.DUPLICATE), (archive.released, Outcome.ARCHIVED)):
        for url in urls:
            if url in counted and counted[url] != now:
                _recount(summary, counted[url], None, now)
                counted[url] = now
        urls.clear()


def _recount(summary: Summary, was: Outcome, error: str | None, now: Outcome) -> None:
    """A page the browser pass captured again: its count moves from its HTTP outcome to the new one."""
    for counter, key in ((summary.statuses, was), (summary.errors, error)):
        if key is not None:
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]
    summary.statuses[now] += 1


def _internal_failure(url: str, exc: Exception) -> PageResult:
    failed = Exchange(url=url, final_url=url, error=Reason.INTERNAL, message=f"internal error: {type(exc).__name__}: {str(exc)[:300]}", started_at=time.time())
    return PageResult(url, failed, [failed])


@dataclass
class Seen:
    """What a page's resources need not be asked for again: archived (by any page, in any run),
    failed in this run in a way no retry mends (a 404 stylesheet that every page of a site
    links to), or being fetched right now for another page (the pages of one site arrive
    together and share their stylesheets and logos). Each is asked for once a run."""

    archived: set[str]
    failed: dict[str, Exchange] = field(default_factory=dict)
    pending: dict[tuple[str, Reach], asyncio.Future[Exchange]] = field(default_factory=dict)


async def fetch_images(client: Client, budget: Budget, images: list[str], page_reach: Reach, seen: Seen) -> list[Exchange]:
    """Capture an article's images on the resource budget, from addresses no more private than the page's.

    Returns the outcome of each image not archived before, in order: fetched, or shared with
    the page that fetched it in this run. `seen` grows as outcomes arrive.
    A page's images are asked for together: the budget's slots and each host's gate pace them,
    and a page with many images on a slow host takes one wait, not one per image.
    """

    async def one(image: str) -> Exchange | None:
        if image in seen.archived:  # by a page that finished it since this list was made
            return None
        if image in seen.failed:
            return seen.failed[image]
        key = (image, page_reach)  # what a page may fetch depends on how private its own address is
        if key in seen.pending:
            return await asyncio.shield(seen.pending[key])  # a stop cancels this wait, not the fetch
        outcome = seen.pending[key] = asyncio.get_running_loop().create_future()
        try:
            final = (await with_retries(lambda: client.get(image, budget=budget, reach=page_reach), budget.retries, budget.backoff, budget.timeout))[-1]
            if final.ok:
                seen.archived.add(image)
            elif not final.retryable and final.error != Reason.PRIVATE_ADDRESS:  # that one depends on the page
                seen.failed[image] = final
            outcome.set_result(final)
            return final
        except Exception as exc:  # those waiting fail as this page's images do
            outcome.set_exception(exc)
            outcome.exception()  # retrieved: it is raised in this page's task
            raise
        finally:
            del seen.pending[key]
            if not outcome.done():
                outcome.cancel()  # a stop: those waiting stop too

    found = await asyncio.gather(*(one(image) for image in dict.fromkeys(images) if image not in seen.archived))
    return [exchange for exchange in found if exchange is not None]


async def with_retries(get: Callable[[], Awaitable[Exchange]], retries: int, backoff: float, cap: float,
                       timeout_retries: int | None = None) -> list[Exchange]:
    """Every try at one request: again after a backoff (or Retry-After, up to `cap`) while
    retrying may help, at most `retries` more times, of which at most `timeout_retries` after a
    timeout (a hanging server costs a whole timeout each time). The last try is the outcome."""
    tries: list[Exchange] = []
    for attempt in range(retries + 1):
        tries.append(await get())
        if not tries[-1].retryable or attempt == retries:
            break
        if timeout_retries is not None and sum(t.error == Reason.TIMEOUT for t in tries) > timeout_retries:
            break
        await asyncio.sleep(backoff_delay(attempt, backoff, tries[-1].retry_after, cap))
    return tries


def _outcome(result: PageResult, page: PageToFetch) -> Outcome:
    if result.ok:
        if result.final.status == 304:
            return Outcome.UNCHANGED
        return Outcome(result.extraction.status) if result.extraction else Outcome.ARCHIVED
    return Outcome.GONE if page.has_capture else Outcome.FAILED


async def fetch_page(client: Client, page: PageToFetch, options: FetchOptions) -> PageResult:
    headers: dict[str, str] = {}
    if options.refresh and page.has_capture:
        if page.etag:
            headers["If-None-Match"] = page.etag
        if page.last_modified:
            headers["If-Modified-Since"] = page.last_modified
    held = not options.allow_private  # redirects no more private than the page as written
    attempts = await with_retries(lambda: client.get(page.url, headers, same_reach=held), options.retries, options.backoff,
                                  options.retry_after_cap, options.timeout_retries)
    final = attempts[-1]
    if final.status == 404 and page.candidates:
        for candidate in page.candidates:  # a URL glued to the next word in the seed
            alternative = await client.get(candidate, same_reach=held)
            attempts.append(alternative)
            if alternative.ok:
                final = alternative
                break
    result = PageResult(page.url, final, attempts)
    if not final.ok and options.wayback and not page.has_capture:
        await _wayback(client, options, result)
    return result


async def _wayback(client: Client, options: FetchOptions, result: PageResult) -> None:
    """Archive the Internet Archive's closest snapshot of a page that failed."""
    api = options.wayback_api.rstrip("/") + "/wayback/available?url=" + quote(result.url, safe="")
    try:
        answer = await client.get_json(api)
        closest = answer["archived_snapshots"]["closest"]
        if not closest.get("available", True) or not closest.get("url"):
            return
    except Exception:  # noqa: BLE001 - no snapshot is just no snapshot
        return
    # The id_ flag asks for the page as captured, without the Wayback toolbar.
    snapshot = re.sub(r"/web/(\d+)(?:[a-z_]*)/", r"/web/\1id_/", closest["url"], count=1)
    exchange = await client.get(snapshot)
    result.attempts.append(exchange)
    if exchange.ok:
        result.final = exchange
        result.source = Source.WAYBACK
        result.wayback_timestamp = str(closest.get("timestamp") or "") or None
