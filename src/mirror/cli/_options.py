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
# `--help` groups the options of `fetch` and `check` in these panels (typer's rich_help_panel)
WHAT, POLITE, IDENTITY, BROWSER, RUN = "What to fetch", "Politeness", "Identity and access", "Browser", "The run"

Concurrency = Annotated[int, typer.Option(min=1, help="Requests in flight overall.", rich_help_panel=POLITE)]
PerHost = Annotated[int, typer.Option(min=1, help="Requests in flight to one host.", rich_help_panel=POLITE)]
Delay = Annotated[float, typer.Option(min=0, help="Seconds between requests to one host.", rich_help_panel=POLITE)]
Timeout = Annotated[float, typer.Option(min=0.1, help="Seconds for a whole request.", rich_help_panel=POLITE)]
Retries = Annotated[int, typer.Option(min=0, help="Retries for timeouts, resets, 408, 429, 5xx.", rich_help_panel=POLITE)]
TimeoutRetries = Annotated[int, typer.Option(min=0, help="Of those, how many after a timeout.", rich_help_panel=POLITE)]
Backoff = Annotated[float, typer.Option(min=0, help="Seconds before the first retry; doubles.", rich_help_panel=POLITE)]
UserAgent = Annotated[str | None, typer.Option(help="User-Agent header.", show_default="browser-like", rich_help_panel=IDENTITY)]
Header = Annotated[
    list[str] | None, typer.Option("--header", help="'Name: value' (repeatable), only to the hosts of the URLs fetched.", rich_help_panel=IDENTITY)
]
HeaderAllHosts = Annotated[bool, typer.Option("--header-all-hosts", help="Send --header values to every host.", rich_help_panel=IDENTITY)]
AllowPrivate = Annotated[
    bool, typer.Option("--allow-private", help="Fetch from private and loopback addresses for public pages.", rich_help_panel=IDENTITY)
]
Cookies = Annotated[Path | None, typer.Option(help="Netscape cookies.txt, each cookie to its own domain.", dir_okay=False, rich_help_panel=IDENTITY)]
CookiesFromBrowser = Annotated[
    str | None,
    typer.Option(
        "--cookies-from-browser",
        metavar="BROWSER[:PROFILE]",
        help="Your browser profile's cookies (chromium, chrome, brave, edge, firefox), each to its own domain.",
        rich_help_panel=IDENTITY,
    ),
]
Wayback = Annotated[bool, typer.Option("--wayback", help="For pages that fail, the Internet Archive's copy.", rich_help_panel=WHAT)]
WaybackApi = Annotated[str, typer.Option(envvar="MIRROR_WAYBACK_API", help="The Wayback availability API.", rich_help_panel=WHAT)]
Workers = Annotated[int | None, typer.Option(min=1, help="Extraction processes.", show_default="per core", rich_help_panel=RUN)]
ExtractTimeout = Annotated[float, typer.Option(min=0.1, help="Seconds for one extraction; then plain text.", rich_help_panel=RUN)]
Chromium = Annotated[
    str | None, typer.Option(envvar="MIRROR_CHROMIUM", help="The chromium to drive.", show_default="chromium", rich_help_panel=BROWSER)
]
BrowserTabs = Annotated[int | None, typer.Option(min=1, help="Pages rendered at once.", show_default="per core, ≤4", rich_help_panel=BROWSER)]
Browser = Annotated[
    BrowserMode,
    typer.Option(
        envvar="MIRROR_BROWSER",
        case_sensitive=False,
        help="Render in chromium: auto (when a script makes the article), always, never.",
        rich_help_panel=BROWSER,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.", rich_help_panel=RUN)]
Ray = Annotated[
    bool,
    typer.Option("--ray", help="On the Ray cluster RAY_ADDRESS names, else a local one (pip install 'mirror\\[cluster]').", rich_help_panel=RUN),
]
