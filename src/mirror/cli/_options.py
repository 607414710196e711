"""The options commands share: the archive, the seeds and (`mirror fetch`, `mirror check`) how
politely to ask, as whom, and how to report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._enums import BrowserMode
from ._common import ARCHIVE_ENV

ArchiveDir = Annotated[
    Path,
    typer.Option(
        "--archive",
        envvar=ARCHIVE_ENV,
        help="Archive folder; the database is DIR/mirror.db.",
        file_okay=False,
    ),
]
Sources = Annotated[
    list[str] | None,
    typer.Argument(help="Seed files, folders or URLs.", show_default="seeds/"),
]
Concurrency = Annotated[int, typer.Option(min=1, help="Requests in flight overall.")]
PerHost = Annotated[int, typer.Option(min=1, help="Requests in flight to one host.")]
Delay = Annotated[float, typer.Option(min=0, help="Minimum seconds between requests to one host.")]
Timeout = Annotated[float, typer.Option(min=0.1, help="Seconds for a whole request: connect, headers and body.")]
Retries = Annotated[int, typer.Option(min=0, help="Retries for timeouts, connection errors, 408, 429, 5xx.")]
TimeoutRetries = Annotated[int, typer.Option(min=0, help="Of those, retries after a timeout (each can wait --timeout again).")]
Backoff = Annotated[float, typer.Option(min=0, help="Seconds before the first retry; doubles each time.")]
UserAgent = Annotated[str | None, typer.Option(help="User-Agent header.", show_default="a browser-like one naming mirror")]
Header = Annotated[
    list[str] | None, typer.Option("--header", help="Extra header 'Name: value' (repeatable), sent only to the hosts of the URLs being fetched.")
]
HeaderAllHosts = Annotated[
    bool, typer.Option("--header-all-hosts", help="Send --header values to every host, redirect targets and image hosts included.")
]
AllowPrivate = Annotated[
    bool, typer.Option("--allow-private", help="Fetch images from private and loopback addresses even for pages on public ones.")
]
Cookies = Annotated[Path | None, typer.Option(help="Netscape cookies.txt, sent to the cookies' own domains.", dir_okay=False)]
Wayback = Annotated[bool, typer.Option("--wayback", help="Archive the Internet Archive's snapshot of pages that fail.")]
WaybackApi = Annotated[str, typer.Option(envvar="MIRROR_WAYBACK_API", help="Base URL of the Wayback availability API.")]
Workers = Annotated[int | None, typer.Option(min=1, help="Extraction processes.", show_default="one per core")]
ExtractTimeout = Annotated[float, typer.Option(min=0.1, help="Seconds for one page's extraction; past it, the page's plain text is kept.")]
Chromium = Annotated[str | None, typer.Option(envvar="MIRROR_CHROMIUM", help="The chromium to drive.", show_default="chromium on the PATH")]
BrowserTabs = Annotated[
    int | None, typer.Option(min=1, help="Pages rendered at once in the browser.", show_default="one per core, as memory allows, at most 4")
]
Browser = Annotated[
    BrowserMode,
    typer.Option(
        envvar="MIRROR_BROWSER",
        case_sensitive=False,
        help="Render pages in chromium: auto (JavaScript challenges, app shells, pages a script fills), always (every HTML page), never.",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
Ray = Annotated[
    bool,
    typer.Option("--ray", help="Run on the Ray cluster RAY_ADDRESS names, else on a local Ray instance (pip install 'mirror[cluster]')."),
]
