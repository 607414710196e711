"""`mirror fetch` and `mirror reindex`: the commands that write captures and the search index.
`fetch` checks its options, reads the reading lists, runs the fetcher and tells what it did."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from .._enums import BrowserMode
from .._util.text import count
from ._common import err, fail, open_archive, print_json, read_inventory, safe
from ._options import (
    POLITE,
    RUN,
    WHAT,
    AllowPrivate,
    ArchiveDir,
    AsJson,
    Backoff,
    Browser,
    BrowserTabs,
    Chromium,
    Concurrency,
    Cookies,
    CookiesFromBrowser,
    Delay,
    ExtractTimeout,
    Header,
    HeaderAllHosts,
    PerHost,
    Ray,
    Retries,
    Sources,
    Timeout,
    TimeoutRetries,
    UserAgent,
    Wayback,
    WaybackApi,
    Workers,
)

if TYPE_CHECKING:
    from ..fetch import FetchOptions, Summary
    from ..fetch.engine import Engine
    from ..seeds.documents import Inventory

_BAD_IN_HEADER = re.compile("[\x00-\x08\x0a-\x1f\x7f]")  # CR and LF would start another header

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def _size(text: str | int) -> int:
    """`50M`, `10MB`, `1.5GiB`, `500000`: a size in bytes, as people write it."""
    if isinstance(text, int):  # the default
        return text
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?)?b?\s*", text, re.IGNORECASE)
    if not match:
        raise typer.BadParameter(f"{text!r} is not a size: write it as 50M, 10MB, 2GiB or a number of bytes")
    size = int(float(match[1]) * _UNITS[(match[2] or "").lower()])
    if size < 1:
        raise typer.BadParameter(f"{text!r}: the limit must be at least one byte")
    return size


def fetch(
    sources: Sources = None,
    archive: ArchiveDir = Path("archive"),
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Also pages that failed before.", rich_help_panel=WHAT)] = False,
    all_pending: Annotated[bool, typer.Option("--all-pending", help="Also what earlier lists left pending.", rich_help_panel=WHAT)] = False,
    refresh: Annotated[bool, typer.Option("--refresh", help="Re-check every page (conditional requests).", rich_help_panel=WHAT)] = False,
    images: Annotated[bool, typer.Option("--images/--no-images", help="The articles' images and styles too.", rich_help_panel=WHAT)] = True,
    wayback: Wayback = False,
    wayback_api: WaybackApi = "https://archive.org",
    concurrency: Concurrency = 16,
    per_host: PerHost = 2,
    delay: Delay = 1.0,
    timeout: Timeout = 30.0,
    max_bytes: Annotated[
        int, typer.Option(parser=_size, metavar="SIZE", help="Refuse larger bodies (decoded): 50M, 2GiB.", show_default="50M", rich_help_panel=POLITE)
    ] = 50_000_000,
    retries: Retries = 3,
    timeout_retries: TimeoutRetries = 1,
    backoff: Backoff = 1.0,
    user_agent: UserAgent = None,
    header: Header = None,
    header_all_hosts: HeaderAllHosts = False,
    allow_private: AllowPrivate = False,
    cookies: Cookies = None,
    cookies_from_browser: CookiesFromBrowser = None,
    browser: Browser = BrowserMode.AUTO,
    chromium: Chromium = None,
    browser_tabs: BrowserTabs = None,
    workers: Workers = None,
    extract_timeout: ExtractTimeout = 30.0,
    ray: Ray = False,
    shards: Annotated[
        int | None,
        typer.Option(
            min=1, help="With --ray: workers fetching, each owning a share of the hosts.", show_default="the cluster's CPUs", rich_help_panel=RUN
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Read the reading lists (seeds/ unless given), then fetch pending pages into WARC captures:
    those the lists given link, or, without sources, every pending page a list read before links
    (seeds/'s, other files', URLs given on the command line).

    Examples: mirror fetch (seeds/, and what is pending); mirror fetch mylist.md (its pages only);
    mirror fetch https://example.com/post; mirror fetch --retry-failed (try failed pages again);
    mirror fetch --ray (on the Ray cluster RAY_ADDRESS names: docs/scale.md).
    """
    given = dict(locals())  # the options as typer converted them, by name
    if shards is not None and not ray:
        fail("--shards goes with --ray (the workers of a cluster run)", code=2)
    options = _options(given)
    inventory = read_inventory(sources)
    # given sources, the pages they link; else every page some list links
    only = None if not sources or all_pending else _urls(inventory)
    with _engine(ray, shards, quiet=as_json) as engine:
        summary = _run_fetch(archive, options, inventory, only, engine)
        feeds = _feeds_given(archive, inventory)
        if not as_json:
            _tell(summary, inventory, sources, all_pending)
            for warning in feeds.warnings:
                err.print(f"[yellow]warning:[/] {safe(warning)}")
        entries = _fetch_entries(archive, options, feeds, as_json, engine) if feeds.links else None
        cluster = _cluster_report(engine)
    if cluster and cluster["workers_died"] and not as_json:
        err.print(f"{cluster['workers_died']} fetching workers died during the run: their requests under way were made again by new ones")
    if as_json:
        report = summary.as_dict()
        if cluster:
            report["cluster"] = cluster
        if feeds.seeds or feeds.warnings:
            report["feeds"] = {
                "feeds": feeds.seeds,
                "entries": len(feeds.links),
                "warnings": feeds.warnings,
                "run": entries.as_dict() if entries else None,
            }
        print_json(report)


def _cluster_report(engine: Engine) -> dict[str, int] | None:
    """The cluster's part of the summary: its CPUs, the fetching workers, how many died."""
    from ..fetch.engine import LOCAL

    if engine is LOCAL:
        return None
    cpus, shards, deaths = (getattr(engine, name) for name in ("cpus", "shards", "deaths"))
    return {"cpus": cpus, "shards": shards, "workers_died": deaths}


@contextmanager
def _engine(ray: bool, shards: int | None, quiet: bool = False) -> Iterator[Engine]:
    """Where the command's work is carried out: here, or (--ray) on a Ray cluster, connected to for
    the whole command and left when it ends."""
    from ..fetch.engine import LOCAL

    if not ray:
        yield LOCAL
        return
    from ..cluster import ClusterError, connect

    with ExitStack() as stack:
        try:
            engine = stack.enter_context(connect(shards))
        except ClusterError as exc:
            fail(str(exc))
        if not quiet:
            err.print(f"on Ray: {engine.cpus} CPUs for extraction, {engine.shards} workers fetching (each owning a share of the hosts)")
        yield cast("Engine", engine)  # (its writer and client are the cluster's stand-ins for a CaptureWriter and a Client)


def _fetch_entries(archive: Path, options: FetchOptions, feeds: Inventory, quiet: bool, engine: Engine) -> Summary:
    """A feed's entries fetched as a reading list of someone else's: without the user's --header
    values (unless --header-all-hosts) and at no address more private than the feed's own."""
    from ..fetch.feeds import feed_reach

    reach = max(feed_reach(url) for url in feeds.seeds)
    options = dataclasses.replace(options, headers={} if not options.header_all_hosts else options.headers, page_reach=int(reach))
    if not quiet:
        given = ", ".join(map(safe, feeds.seeds))
        err.print(f"{count(len(feeds.links), 'entry', 'entries')} in {count(len(feeds.seeds), 'feed')} given ({given}): fetching them")
    summary = _run_fetch(archive, options, feeds, _urls(feeds), engine)
    if not quiet:
        _tell(summary, feeds, feeds.seeds, False)
    return summary


def _feeds_given(archive: Path, inventory: Inventory) -> Inventory:
    """The entries of the URLs given on the command line that are feeds, read from their captures."""
    from .._enums import COMMAND_LINE
    from ..fetch.feeds import feed_entries

    given = [link.url for link in inventory.links if link.seed == COMMAND_LINE and not link.skip_reason]
    if not given:
        return type(inventory)()
    with open_archive(archive) as store:
        return feed_entries(store.db, store.path, given)


def _urls(inventory: Inventory) -> set[str]:
    return {link.url for link in inventory.links if not link.skip_reason}


def _options(given: dict) -> FetchOptions:
    """The fetcher's options from the command's, as typer converted them, by name; one it
    cannot take (a header, the browser, the cookies file, MIRROR_NAMESERVERS) ends the command (exit 2)."""
    from .. import fetch as fetching

    headers = _headers(given["header"], given["user_agent"])
    mode, chromium_path = _browser(given["browser"], given["chromium"]) if not given.get("ray") else _no_browser(given["browser"])
    # every option of this command that FetchOptions knows, by name; the rest are checked here
    fields = {f.name for f in dataclasses.fields(fetching.FetchOptions)}
    options = fetching.FetchOptions(
        **{name: value for name, value in given.items() if name in fields},
    )
    options.user_agent = given["user_agent"] or fetching.DEFAULT_USER_AGENT
    options.headers, options.browser, options.chromium = headers, mode, chromium_path
    cookies = given["cookies"]
    if cookies is not None and not cookies.is_file():
        fail(f"{cookies}: no such cookies file", code=2)
    if given.get("cookies_from_browser"):
        options.cookie_jar = _browser_cookies(given["cookies_from_browser"])
    from ..http.resolver import nameservers_from_env

    try:
        nameservers_from_env()
    except ValueError as exc:
        fail(str(exc), code=2)
    return options


def _browser_cookies(spec: str):
    """The browser profile's cookies, read now: what was read is said in one line (an error ends the command, exit 2)."""
    from ..fetch.browser_cookies import CookieSourceError, cookies_from_browser

    try:
        read = cookies_from_browser(spec)
    except CookieSourceError as exc:
        fail(str(exc), code=2)
    cookies = list(read.jar)
    if not cookies:
        fail(
            f"--cookies-from-browser {spec}: {read.source} holds no cookie that could be read{'; ' + '; '.join(read.notes) if read.notes else ''}",
            code=2,
        )
    sites = len({cookie.domain.lstrip(".") for cookie in cookies})
    notes = f" ({'; '.join(read.notes)})" if read.notes else ""
    err.print(f"cookies: {len(cookies)} of {sites} sites from {safe(read.source)}, each sent only to its own site{safe(notes)}")
    return read.jar


def _headers(header: list[str] | None, user_agent: str | None) -> dict[str, str]:
    """--header 'Name: value' options as headers; --user-agent checked the same way."""
    headers = {}
    for item in header or []:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            fail(f"--header {item!r}: expected 'Name: value'", code=2)
        if _BAD_IN_HEADER.search(item):
            fail(f"--header {item!r}: a header cannot hold line breaks or control characters", code=2)
        headers[name.strip()] = value.strip()
    if user_agent is not None and _BAD_IN_HEADER.search(user_agent):
        fail(f"--user-agent {user_agent!r}: a header cannot hold line breaks or control characters", code=2)
    return headers


def _browser(browser: BrowserMode, chromium: str | None) -> tuple[BrowserMode, str | None]:
    """The browser mode and the chromium the run renders with; without one, `auto` goes on over HTTP."""
    from ..browser.renderer import find_chromium, resolve

    if chromium and find_chromium(chromium) is None:
        fail(f"--chromium {chromium}: not an executable chromium", code=2)
    mode, chromium_path, no_browser = resolve(browser, chromium)
    if no_browser and browser != BrowserMode.AUTO:
        fail(f"--browser {browser}: {no_browser}", code=2)
    if no_browser:
        err.print(f"[yellow]no browser:[/] {no_browser}; pages that need JavaScript are kept as plain HTTP captures")
    return mode, chromium_path


def _no_browser(browser: BrowserMode) -> tuple[BrowserMode, None]:
    """A run on a cluster is over HTTP only: the browser pass does not run on its nodes (yet)."""
    if browser == BrowserMode.ALWAYS:
        fail("--browser always: not with --ray (the cluster's workers fetch over HTTP only)", code=2)
    return BrowserMode.NEVER, None


def _run_fetch(archive: Path, options: FetchOptions, inventory: Inventory | None, only: set[str] | None, engine: Engine | None = None) -> Summary:
    """The inventory recorded (if any) and its pages fetched (here, or where `engine` says), with a
    progress display; Ctrl-C keeps what is done (exit 130)."""
    from .. import fetch as fetching
    from ..fetch.engine import LOCAL
    from .progress import FetchReporter

    reporter = FetchReporter(err.get(), label="check" if options.check else "fetch")
    try:
        with open_archive(archive, create=inventory is not None, lock=True, cleanup=reporter.stop) as store:
            if inventory is not None:
                store.record_inventory(inventory)
            summary = fetching.run(
                store,
                options,
                on_page=reporter.page,
                on_start=reporter.start,
                on_render=reporter.render,
                on_tail=reporter.tail,
                only=only,
                engine=engine or LOCAL,
            )
    except fetching.FetchError as exc:
        reporter.stop()
        fail(str(exc), code=2)
    except KeyboardInterrupt:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped cleanly: a second Ctrl-C must not cut the exit short (exit -2)
        reporter.stop()
        err.print("[yellow]interrupted:[/] everything finished so far is saved; run the same command again to resume")
        raise typer.Exit(130) from None
    reporter.stop()
    return summary


def _tell(summary: Summary, inventory: Inventory, sources: list[str] | None, all_pending: bool) -> None:
    """What the run did, on stderr: a table of pages, or why there was nothing to do."""
    if summary.left_pending and summary.left_pending == summary.done:  # the run tried nothing: one line says so
        from ..http.host_health import OFFLINE_HINT

        err.print(f"[red]{OFFLINE_HINT}[/]; {count(summary.left_pending, 'page')} left pending: the next `mirror fetch` tries them")
    elif summary.total == 0 and not (summary.images_resumed or summary.deferred_due or summary.rendered):
        if inventory.links:  # (a list without links has said so already)
            err.print(_nothing_to_fetch(sources, all_pending, inventory))
    elif summary.total == 0:  # images or renders of pages saved before only: no empty table of pages
        from .progress import DEFERRED

        if summary.rendered:
            outcomes = ", ".join(f"{outcome} {n}" for outcome, n in summary.rendered.most_common())
            err.print(f"{count(sum(summary.rendered.values()), 'page')} saved before rendered in the browser: {outcomes}")
        resources = summary.resources
        if resources.asked:
            err.print(f"{count(resources.done - resources.failed, 'image')} fetched, {resources.failed} failed")
        if summary.deferred:
            err.print(f"{summary.deferred} {DEFERRED}")
    else:
        from .progress import summary_table

        err.print(summary_table(summary))
        if summary.left_pending:
            err.print(f"{count(summary.left_pending, 'page')} left pending (never really tried): the next `mirror fetch` tries them")
        if note := _skipped_note(inventory):
            err.print(note[2:])


def _nothing_to_fetch(sources: list[str] | None, all_pending: bool, inventory: Inventory) -> str:
    pages = len({link.url for link in inventory.links if not link.skip_reason})
    if not pages:
        return f"nothing to fetch: no web page among the {count(len(inventory.links), 'link')} read{_skipped_note(inventory)}"
    which = "the reading lists link"
    if sources and not all_pending:
        which = "this reading list links" if len(sources) == 1 and "://" not in sources[0] else "these sources link"
    return (
        f"nothing to fetch: every page {which} ({pages}) was fetched before "
        f"(--retry-failed tries the failed ones again, --refresh re-checks them all){_skipped_note(inventory)}"
    )


def _skipped_note(inventory: Inventory) -> str:
    """The links a run does not fetch, and why, in a few words."""
    skipped = [link for link in inventory.links if link.skip_reason]
    if not skipped:
        return ""
    are = "is not a web page and is" if len(skipped) == 1 else "are not web pages and are"
    return f"; {count(len(skipped), 'link')} {are} skipped (`mirror links` lists them with the reason)"


def reindex(
    archive: ArchiveDir = Path("archive"),
    workers: Workers = None,
    extract_timeout: ExtractTimeout = 30.0,
    ray: Ray = False,
) -> None:
    """Re-extract every page from its WARC capture (no network) and rebuild the search index
    (--ray: the extractions as tasks on a Ray cluster, which must see the archive folder)."""
    from ..fetch import reindex as run_reindex

    with open_archive(archive, lock=True) as store, _engine(ray, None) as engine:
        workers = workers or getattr(engine, "cpus", None)
        counts = run_reindex(store, workers=workers, extract_timeout=extract_timeout, engine=engine)
    due = counts.pop("with images to fetch", 0)
    err.print(", ".join(f"{k} {v}" for k, v in counts.items()) or "nothing captured yet")
    if due:
        err.print(f"{count(due, 'article')} now {'shows' if due == 1 else 'show'} images not archived yet: the next `mirror fetch` fetches them")
