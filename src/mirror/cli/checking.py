"""`mirror check`, typer's face: re-check archived pages politely, every version kept, soft 404s
caught; meant to be run every week (cron, a systemd timer). A check stopped halfway resumes where
it stopped. What it asks and says is the `check` stage's; the re-check is a fetch run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._enums import BrowserMode, VersionState
from .._util.text import count
from ..check import report as check_report
from ._common import err, fail, open_archive, print_json, reading_list, safe
from ._options import (
    AllowPrivate,
    ArchiveDir,
    Browser,
    BrowserTabs,
    Chromium,
    Concurrency,
    Cookies,
    CookiesFromBrowser,
    Delay,
    Header,
    PerHost,
    Retries,
    Timeout,
    UserAgent,
    Wayback,
    WaybackApi,
)

RotFound = 3  # exit code of `--fail-on-rot` when a page went gone, soft 404 or blocked in this check


def _age(text: str | float) -> float:
    try:
        return check_report.parse_age(text)
    except check_report.AgeError as exc:
        raise typer.BadParameter(str(exc)) from None


def check(
    archive: ArchiveDir = Path("archive"),
    older_than: Annotated[
        float, typer.Option(parser=_age, metavar="AGE", help="Check pages not checked for this long: 7d, 12h, 30m, 0 (all).", show_default="1d")
    ] = 86400.0,
    concurrency: Concurrency = 16,
    per_host: PerHost = 2,
    delay: Delay = 1.0,
    timeout: Timeout = 30.0,
    site: Annotated[str | None, typer.Option(help="Only pages of this site (a host and its subdomains).")] = None,
    retries: Retries = 3,
    user_agent: UserAgent = None,
    header: Header = None,
    cookies: Cookies = None,
    cookies_from_browser: CookiesFromBrowser = None,
    seed: Annotated[str | None, typer.Option(help="Only pages this reading list links (its path, or its file's name).")] = None,
    allow_private: AllowPrivate = False,
    wayback: Wayback = False,
    wayback_api: WaybackApi = "https://archive.org",
    browser: Browser = BrowserMode.AUTO,
    chromium: Chromium = None,
    browser_tabs: BrowserTabs = None,
    fail_on_rot: Annotated[bool, typer.Option("--fail-on-rot", help=f"Exit {RotFound} when a page went gone, soft 404 or blocked.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON: counts, the pages that are not unchanged, link health.")] = False,
) -> None:
    """Re-check archived pages (conditional requests, the same politeness as fetch) and keep every
    version: unchanged, changed (and by how much), moved, gone, soft 404, blocked. Pages never
    archived are tried again. Exit 0 when the check ran, whatever it found (2: bad options, 1: the
    archive cannot be used, 130: interrupted; with --fail-on-rot, 3 when links rotted).

    Examples: mirror check (pages not checked for a day); mirror check --older-than 7d --json;
    mirror check --site zhihu.com.
    """
    from .fetching import _options, _run_fetch

    if header and not (site or seed):  # a check asks every archived host: a token meant for one would go to all
        fail("--header goes with --site or --seed: a check asks every host in the archive, and the header would go to all of them", code=2)
    if (site is not None and not site.strip()) or (seed is not None and not seed.strip()):
        fail("--site and --seed take a name (a host, a reading list as `mirror links` names it)", code=2)
    options = _options({**locals(), "header_all_hosts": False})
    options.refresh = options.retry_failed = options.check = True
    from ..check.link_health import link_health, pages_to_check

    with open_archive(archive, lock=True) as store:
        seed = reading_list(store.db, seed)
        urls = pages_to_check(store.db, older_than=older_than, site=site, seed=seed)
        if not urls:
            said, mistaken = check_report.why_nothing(store.db, older_than, site, seed)
            health = link_health(store.db)
    if not urls:
        if mistaken:
            fail(said, code=2)
        err.print(safe(said))
        if as_json:
            print_json({"checked": 0, "states": {}, "back": 0, "pages": [], "health": health})
        return
    summary = _run_fetch(archive, options, None, set(urls))
    with open_archive(archive) as store:
        report = check_report.report(store.db, set(urls), summary.done, dict(summary.versions), summary.elapsed)
    if as_json:
        print_json(report)
    else:
        _tell(report)
    if fail_on_rot and any(report["states"].get(state) for state in check_report.ROT):
        raise typer.Exit(RotFound)


def _tell(report: dict) -> None:
    """The report in the words the progress bar used: the counts by state, how many links are
    back, then the pages that are not unchanged (those back first)."""
    states = report["states"]
    counts = ", ".join(f"{states[s]} {check_report.state_word(s)}" for s in check_report.ORDER if states.get(s))
    back = f"; back: {report['back']}" if report["back"] else ""
    err.print(f"checked {count(report['checked'], 'page')}: {counts or 'nothing recorded'}{back}")
    for page in report["pages"][:30]:
        state = VersionState(page["state"])
        word = check_report.state_word(state)
        if page["back_from"]:
            word = f"back (was {check_report.state_word(page['back_from'])}), {word}"
        how = f" ({check_report.share(page['changed'])} of the text)" if state == VersionState.CHANGED and page["changed"] is not None else ""
        note = f": {safe(page['note'])[:120]}" if page["note"] and state != VersionState.CHANGED else ""
        err.print(f"  {word}{how}  {safe(page['url'])}{note}")
    if len(report["pages"]) > 30:
        err.print(f"  … and {len(report['pages']) - 30} more (--json lists them all)")
