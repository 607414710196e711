"""The `mirror` command: parses options and calls the library."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from ._text import readable_date, strip_controls
from ._types import BrowserMode, PageStatus
from .search import MAX_LIMIT
from .store import DB_NAME, Archive, ArchiveError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .seeds import Inventory

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.",
)


class _Console:
    """A rich Console made on first use: `mirror search --json` never loads rich."""

    def __init__(self, **options: object):
        self._options, self._console = options, None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> object:
        return getattr(self.get(), name)


# no emoji codes either: ":x:" in a hostile title or a cookies file's line stays text
out = _Console(highlight=False, emoji=False)
err = _Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

ArchiveDir = Annotated[
    Path,
    typer.Option(
        "--archive",
        envvar="MIRROR_ARCHIVE",
        help="Archive folder; the database is DIR/mirror.db.",
        file_okay=False,
    ),
]
Sources = Annotated[
    list[str] | None,
    typer.Argument(help="Seed files, folders or URLs.", show_default="seeds/"),
]


def main() -> None:
    for number, arg in enumerate(sys.argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 reach us as lone surrogates
            err.print(f"[bold red]error:[/] argument {number} is not valid UTF-8: {safe(arg.encode('utf-8', 'backslashreplace').decode())}")
            raise SystemExit(2) from None
    app()


def _show_version(value: bool) -> None:
    if value:
        from . import __version__

        print(f"mirror {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.

    Start with: mirror fetch mylist.md, then mirror serve --open, or mirror search "words".
    """


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {safe(message)}")
    raise typer.Exit(code)


def safe(value: object) -> str:
    """Untrusted text for rich: no control characters (terminal escapes) and no markup."""
    from rich.markup import escape

    return escape(strip_controls(str(value)))


def print_json(data: object) -> None:
    """JSON on stdout; C1 controls and DEL escaped too (json.dumps leaves them raw)."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    print(re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m[0]):04x}", text))


def _inventory(sources: list[str] | None) -> Inventory:
    """Seed files/folders and URLs named on the command line (default: seeds/)."""
    from .seeds import Inventory, SeedError, links_from_urls, read_seeds

    sources = sources or ["seeds"]
    urls_ = [s for s in sources if s.lower().startswith(("http://", "https://"))]
    paths = [Path(s) for s in sources if s not in urls_]
    try:
        inventory = read_seeds(paths) if paths else Inventory()
    except SeedError as exc:
        fail(str(exc), code=2)
    extra = links_from_urls(urls_)
    inventory.links.extend(extra.links)
    inventory.seeds.extend(extra.seeds)
    for warning in inventory.warnings:
        err.print(f"[yellow]warning:[/] {safe(warning)}")
    return inventory


@app.command()
def links(
    sources: Sources = None,
    archive: ArchiveDir = Path("archive"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as a JSON array.")] = False,
) -> None:
    """Read seed documents and record every link in the archive, without fetching."""
    inventory = _inventory(sources)
    with open_archive(archive, create=True) as store:
        stats = store.record_inventory(inventory)

    if as_json:
        rows = []
        for link in inventory.links:
            row = asdict(link)
            row["candidates"] = list(link.candidates)
            row["status"] = PageStatus.SKIPPED if link.skip_reason else PageStatus.PENDING
            rows.append(row)
        print_json(rows)
    elif not inventory.links:
        pass  # (the seed's warning said it: no empty table)
    elif not out.is_terminal:  # piped or to a file: whole URLs, one link a line, for cut and grep
        print("seed:line\tsection\ttitle\turl\tnote")
        for link in inventory.links:
            print("\t".join(" ".join(strip_controls(cell).split()) for cell in _link_cells(link)))
    elif len(inventory.links) > TABLE_ROWS:
        out.print(_links_summary(inventory))
    else:
        out.print(_links_table(inventory.links, out.width))
    err.print(
        f"{stats.links} links in {len(inventory.seeds)} seeds -> {stats.pages} pages "
        f"({stats.new_pages} new, {stats.skipped} skipped) recorded in {safe(archive / DB_NAME)}"
    )


_BAD_IN_HEADER = re.compile("[\x00-\x08\x0a-\x1f\x7f]")  # CR and LF would start another header

TABLE_ROWS = 300  # more links than this: a summary per seed (drawing a huge table takes minutes)


STORAGE_ERRORS = (OSError, sqlite3.Error)


@contextmanager
def open_archive(
    folder: Path, *, create: bool = False, readonly: bool = False, lock: bool = False, cleanup: Callable[[], None] = lambda: None
) -> Iterator[Archive]:
    """The archive for one command. Whatever goes wrong with the folder or the database, on
    opening or while the command works in it, ends in a clear error (exit 1), never a traceback;
    `cleanup` runs first (a progress display to stop, say)."""
    try:
        with Archive(folder, create=create, readonly=readonly) as store, (store.lock() if lock else nullcontext()):
            yield store
    except ArchiveError as exc:
        cleanup()
        fail(str(exc))
    except STORAGE_ERRORS as exc:
        cleanup()
        storage_failure(folder, exc)


def storage_failure(archive: Path, exc: Exception) -> NoReturn:
    """A full disk or a read-only folder: say so plainly, never a traceback."""
    reason = getattr(exc, "strerror", None) or str(exc)
    fail(
        f"cannot use the archive {archive}: {reason}. Everything saved before this is kept: "
        "free some space or fix the folder's permissions, then run the same command again"
    )


def _links_table(links: list, width: int) -> Table:
    """One row a link; a URL is never wrapped (it is copied from here): one wider than the
    terminal allows loses its middle, and the other columns wrap around it."""
    from rich.table import Table

    room = max(30, width - 40)  # what the other four columns keep at least
    longest = max((len(link.url) for link in links), default=3)
    table = Table("seed:line", "section", "title", show_lines=False)
    table.add_column("url", no_wrap=True, min_width=min(longest, room))
    table.add_column("note")
    for link in links:
        seed_line, section, title, url, note = _link_cells(link)
        table.add_row(*(safe(cell) for cell in (seed_line, section, title, _middle(url, room), note)))
    return table


def _link_cells(link) -> tuple[str, str, str, str, str]:
    note = link.skip_reason or (f"{len(link.candidates)} repairs if 404" if link.candidates else "")
    return f"{link.seed.rsplit('/', 1)[-1]}:{link.line}", link.section or "", link.title or "", link.url, note


def _middle(text: str, width: int) -> str:
    """`text` in `width` characters: its middle gives way (a URL's host and its last part stay)."""
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _links_summary(inventory: Inventory) -> Table:
    """Links, pages and skipped links per seed, for inventories too long to list."""
    from collections import Counter

    links, skipped, pages = Counter(), Counter(), {}
    for link in inventory.links:
        links[link.seed] += 1
        skipped[link.seed] += bool(link.skip_reason)
        pages.setdefault(link.seed, set()).add(link.url)
    from rich.table import Table

    table = Table("seed", title=f"{len(inventory.links)} links: too many to list, use --json for every one")
    for column in ("links", "pages", "skipped"):
        table.add_column(column, justify="right")
    for seed, count in links.items():
        table.add_row(safe(seed), str(count), str(len(pages[seed])), str(skipped[seed]))
    return table


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


def _nothing_to_fetch(sources: list[str] | None, all_pending: bool, inventory: Inventory) -> str:
    pages = len({link.url for link in inventory.links if not link.skip_reason})
    if not pages:
        return f"nothing to fetch: no web page among the {len(inventory.links)} links read{_skipped_note(inventory)}"
    which = "the reading lists link"
    if sources and not all_pending:
        which = "this reading list links" if len(sources) == 1 and "://" not in sources[0] else "these sources link"
    return (f"nothing to fetch: every page {which} ({pages}) was fetched before "
            f"(--retry-failed tries the failed ones again, --refresh re-checks them all){_skipped_note(inventory)}")


def _skipped_note(inventory: Inventory) -> str:
    """The links a run does not fetch, and why, in a few words."""
    skipped = [link for link in inventory.links if link.skip_reason]
    if not skipped:
        return ""
    return f"; {len(skipped)} links are not web pages and are skipped (`mirror links` lists them with the reason)"


@app.command()
def fetch(
    sources: Sources = None,
    archive: ArchiveDir = Path("archive"),
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight overall.")] = 16,
    per_host: Annotated[int, typer.Option(min=1, help="Requests in flight to one host.")] = 2,
    delay: Annotated[float, typer.Option(min=0, help="Minimum seconds between requests to one host.")] = 1.0,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds for a whole request: connect, headers and body.")] = 30.0,
    max_bytes: Annotated[int, typer.Option(parser=_size, metavar="SIZE", help="Refuse bodies larger than this (decoded): 50M, 10MB, 2GiB, 500000.", show_default="50M")] = 50_000_000,
    retries: Annotated[int, typer.Option(min=0, help="Retries for timeouts, connection errors, 408, 429, 5xx.")] = 3,
    timeout_retries: Annotated[int, typer.Option(min=0, help="Of those, retries after a timeout (each can wait --timeout again).")] = 1,
    backoff: Annotated[float, typer.Option(min=0, help="Seconds before the first retry; doubles each time.")] = 1.0,
    user_agent: Annotated[str | None, typer.Option(help="User-Agent header.", show_default="a browser-like one naming mirror")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="Extra header 'Name: value' (repeatable), sent only to the hosts of the URLs being fetched.")] = None,
    header_all_hosts: Annotated[bool, typer.Option("--header-all-hosts", help="Send --header values to every host, redirect targets and image hosts included.")] = False,
    allow_private: Annotated[bool, typer.Option("--allow-private", help="Fetch images from private and loopback addresses even for pages on public ones.")] = False,
    cookies: Annotated[Path | None, typer.Option(help="Netscape cookies.txt, sent to the cookies' own domains.", dir_okay=False)] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Also fetch pages that failed before.")] = False,
    all_pending: Annotated[bool, typer.Option("--all-pending", help="With sources given: also fetch what earlier lists left pending.")] = False,
    refresh: Annotated[bool, typer.Option("--refresh", help="Re-check every page with conditional requests.")] = False,
    wayback: Annotated[bool, typer.Option("--wayback", help="Archive the Internet Archive's snapshot of pages that fail.")] = False,
    wayback_api: Annotated[str, typer.Option(envvar="MIRROR_WAYBACK_API", help="Base URL of the Wayback availability API.")] = "https://archive.org",
    images: Annotated[bool, typer.Option("--images/--no-images", help="Also capture the images articles show.")] = True,
    workers: Annotated[int | None, typer.Option(min=1, help="Extraction processes.", show_default="one per core")] = None,
    extract_timeout: Annotated[float, typer.Option(min=0.1, help="Seconds for one page's extraction; past it, the page's plain text is kept.")] = 30.0,
    browser: Annotated[
        BrowserMode,
        typer.Option(
            envvar="MIRROR_BROWSER",
            case_sensitive=False,
            help="Render pages in chromium: auto (pages without text, app shells, JavaScript challenges), always (every HTML page), never.",
        ),
    ] = BrowserMode.AUTO,
    chromium: Annotated[str | None, typer.Option(envvar="MIRROR_CHROMIUM", help="The chromium to drive.", show_default="chromium on the PATH")] = None,
    browser_tabs: Annotated[int, typer.Option(min=1, help="Pages rendered at once in the browser.")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Read the reading lists (seeds/ unless given), then fetch pending pages into WARC captures:
    those the lists given link, or, without sources, every pending page a list read before links
    (seeds/'s, other files', URLs given on the command line).

    Examples: mirror fetch (seeds/, and what is pending); mirror fetch mylist.md (its pages only);
    mirror fetch https://example.com/post; mirror fetch --retry-failed (try failed pages again).
    """
    given = dict(locals())  # the options as typer converted them, by name
    from . import fetch as fetching
    from ._progress import FetchReporter, summary_table

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
    from .browser import find_chromium, resolve

    if chromium and find_chromium(chromium) is None:
        fail(f"--chromium {chromium}: not an executable chromium", code=2)
    mode, chromium_path, no_browser = resolve(browser, chromium)
    if no_browser and browser != BrowserMode.AUTO:
        fail(f"--browser {browser}: {no_browser}", code=2)
    if no_browser:
        err.print(f"[yellow]no browser:[/] {no_browser}; pages that need JavaScript are kept as plain HTTP captures")
    # every option of this command that FetchOptions knows, by name; the rest are checked above
    fields = {f.name for f in dataclasses.fields(fetching.FetchOptions)}
    options = fetching.FetchOptions(
        **{name: value for name, value in given.items() if name in fields},
    )
    options.user_agent = user_agent or fetching.DEFAULT_USER_AGENT
    options.headers, options.browser, options.chromium = headers, mode, chromium_path
    if cookies is not None and not cookies.is_file():
        fail(f"{cookies}: no such cookies file", code=2)
    from ._resolver import nameservers_from_env

    try:
        nameservers_from_env()
    except ValueError as exc:
        fail(str(exc), code=2)
    inventory = _inventory(sources)
    # given sources, the pages they link; else every page some list links
    only = None if not sources or all_pending else {link.url for link in inventory.links if not link.skip_reason}
    reporter = FetchReporter(err.get())
    try:
        with open_archive(archive, create=True, lock=True, cleanup=reporter.stop) as store:
            store.record_inventory(inventory)
            summary = fetching.run(store, options, on_page=reporter.page, on_start=reporter.start, on_render=reporter.render, only=only)
    except fetching.FetchError as exc:
        reporter.stop()
        fail(str(exc), code=2)
    except KeyboardInterrupt:
        reporter.stop()
        err.print("[yellow]interrupted:[/] everything finished so far is saved; run the same command again to resume")
        raise typer.Exit(130) from None
    reporter.stop()
    if as_json:
        print_json(summary.as_dict())
    elif summary.left_pending:
        from ._client import OFFLINE_HINT

        err.print(f"[red]{OFFLINE_HINT}[/]; {summary.left_pending} pages left pending: the next `mirror fetch` tries them")
    elif summary.total == 0 and not summary.images_resumed:
        if inventory.links:  # (a list without links has said so already)
            err.print(_nothing_to_fetch(sources, all_pending, inventory))
    elif summary.total == 0:  # images only: the first line said whose; no empty table of pages
        if summary.deferred:
            err.print(f"{summary.deferred} images deferred to the next run (their host names had no answer yet)")
    else:
        err.print(summary_table(summary))
        if note := _skipped_note(inventory):
            err.print(note[2:])


@app.command()
def reindex(
    archive: ArchiveDir = Path("archive"),
    workers: Annotated[int | None, typer.Option(min=1, help="Extraction processes.", show_default="one per core")] = None,
    extract_timeout: Annotated[float, typer.Option(min=0.1, help="Seconds for one page's extraction; past it, the page's plain text is kept.")] = 30.0,
) -> None:
    """Re-extract every page from its WARC capture (no network) and rebuild the search index."""
    from .reindex import reindex as run_reindex

    with open_archive(archive, lock=True) as store:
        counts = run_reindex(store, workers=workers, extract_timeout=extract_timeout)
    due = counts.pop("with images to fetch", 0)
    err.print(", ".join(f"{k} {v}" for k, v in counts.items()) or "nothing captured yet")
    if due:
        err.print(f"{due} articles now show images not archived yet: the next `mirror fetch` fetches them")


@app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="Words (all must match), \"a phrase\", prefix*; Chinese works.")],
    archive: ArchiveDir = Path("archive"),
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many hits.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as a JSON array.")] = False,
    site: Annotated[str | None, typer.Option(help="Only pages from this host or site name.")] = None,
    seed: Annotated[str | None, typer.Option(help="Only pages linked from this seed file.")] = None,
    section: Annotated[str | None, typer.Option(help="Only pages linked under this section.")] = None,
) -> None:
    """Full-text search across saved articles, ranked (title above body)."""
    from .search import SearchError, search, unmatched_filters

    try:
        with open_archive(archive, readonly=True) as store:
            hits = search(store.conn, query, limit=limit, site=site, seed=seed, section=section)
            unmatched = [] if hits else unmatched_filters(store.conn, site=site, seed=seed, section=section)
    except SearchError as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json([h.as_dict() for h in hits])
        return
    if unmatched:
        given = {"site": site, "seed": seed, "section": section}
        said = ", ".join(f"--{name} {given[name]!r}" for name in unmatched)
        err.print(f"no saved article matches {safe(said)}: no archived page passes that filter, whatever the words")
        return
    if not hits:
        err.print(f"no saved article matches {safe(repr(query))}")
        return
    from rich.markup import escape

    for n, hit in enumerate(hits, 1):
        snippet = escape(strip_controls(hit.as_dict(("\x02", "\x03"))["snippet"], keep="\x02\x03"))
        snippet = snippet.replace("\x02", "[bold yellow]").replace("\x03", "[/]")
        out.print(f"[bold]{n}. {safe(hit.title or hit.url)}[/]  [dim](mirror show {hit.id})[/]")
        out.print(f"   [cyan]{safe(hit.url)}[/]  {safe(hit.sitename or '')} {safe(readable_date(hit.date))}".rstrip())
        out.print(f"   {snippet}\n")


@app.command()
def show(
    page: Annotated[str, typer.Argument(help="A page's URL (as written or normalized) or its id.")],
    archive: ArchiveDir = Path("archive"),
) -> None:
    """Show a saved article as Markdown, with its metadata and where it came from."""
    from rich.markdown import Markdown

    from .store import queries
    from .urls import normalize

    with open_archive(archive, readonly=True) as store:
        row = queries.find_page(store.db, page, normalize(page))
        if row is None and "://" not in page and not page.isdigit():  # as `links` reads it: the web's default scheme
            row = queries.find_page(store.db, f"https://{page}", normalize(f"https://{page}")) or \
                queries.find_page(store.db, f"http://{page}", normalize(f"http://{page}"))
        if row is None:
            fail(f"{page}: no such page in {archive / DB_NAME}", code=1)
        origins = queries.origins(store.db, row["url"])
    out.print(f"[bold]{safe(row['title'] or row['url'])}[/]")
    facts = [("url", row["url"]), ("status", row["status"]), ("site", row["sitename"]), ("author", row["author"]),
             ("date", readable_date(row["date"])), ("language", row["language"]), ("captured", readable_date(row["fetched_at"])),
             ("error", row["error_message"]), ("same article as", row.get("same_as"))]
    for name, value in facts:
        if value:
            out.print(f"[dim]{name}:[/] {safe(value)}")
    for origin in origins:
        where = f"{origin['seed']}:{origin['line']}" + (f" ({origin['section']})" if origin["section"] else "")
        out.print(f"[dim]from:[/] {safe(where)}")
    out.print()
    if row["markdown"]:
        out.print(Markdown(strip_controls(row["markdown"])))
    elif row["description"]:
        out.print(safe(row["description"]))
    else:
        out.print("[dim](no article text saved for this page)[/]")


@app.command()
def serve(
    archive: ArchiveDir = Path("archive"),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8001,
    host: Annotated[str, typer.Option(help="Address to listen on. On a loopback address only requests for localhost names are answered.")] = "127.0.0.1",
    allow_host: Annotated[list[str] | None, typer.Option("--allow-host", help="Also answer requests for this host name (repeatable), e.g. behind a proxy.")] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the search page in a browser.")] = False,
) -> None:
    """Browse and search the archive offline with datasette."""
    import inspect
    import threading
    import webbrowser

    import uvicorn
    from datasette.app import Datasette


    db_path = archive / DB_NAME
    with open_archive(archive, readonly=True):  # brings an older database up to the current schema where it can
        pass
    _check_port_free(host, port)
    # the plugin answers, on a loopback socket, only loopback host names and these (DNS rebinding)
    plugins = {"plugins": {"mirror": {"allow_hosts": list(allow_host or ())}}}
    options = {"settings": {"sql_time_limit_ms": 5000}}
    options |= {"config": plugins} if "config" in inspect.signature(Datasette).parameters else {"metadata": plugins}  # 1.0 | 0.65
    if os.access(archive, os.W_OK):
        datasette = Datasette([str(db_path)], **options)
    else:  # a read-only folder: nobody can change the file, and SQLite needs no -shm beside it
        datasette = Datasette(immutables=[str(db_path)], **options)
    app_ = datasette.app()
    url = f"http://{host}:{port}/-/mirror/search"
    err.print(f"serving {safe(db_path)} at http://{safe(host)}:{port}/ (search: {safe(url)}); Ctrl-C stops")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, [url]).start()
    try:
        uvicorn.run(app_, host=host, port=port, log_level="warning")
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror})")


def _check_port_free(host: str, port: int) -> None:
    """uvicorn logs a bind error and exits 3; say it our way before starting."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})", code=2)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})")
