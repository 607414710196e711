"""`mirror check`: re-check archived pages politely, every version kept, soft 404s caught; meant
to be run every week (cron, a systemd timer). A check stopped halfway resumes where it stopped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._enums import BrowserMode, VersionState
from ._common import err, fail, open_archive, print_json, safe
from ._options import (
    AllowPrivate,
    ArchiveDir,
    Browser,
    BrowserTabs,
    Chromium,
    Concurrency,
    Cookies,
    Delay,
    Header,
    PerHost,
    Retries,
    Timeout,
    UserAgent,
    Wayback,
    WaybackApi,
)

if TYPE_CHECKING:
    from ..fetch import Summary

RotFound = 3  # exit code of `--fail-on-rot` when a page went gone, soft 404 or blocked in this check
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_ROT = (VersionState.GONE, VersionState.SOFT_404, VersionState.BLOCKED)
_ORDER = (VersionState.SAME, VersionState.CHANGED, VersionState.MOVED, VersionState.GONE, VersionState.SOFT_404,
          VersionState.BLOCKED, VersionState.NEEDS_BROWSER, VersionState.FAILED, VersionState.FIRST)
_WORDS = {VersionState.SAME: "unchanged", VersionState.FIRST: "archived for the first time"}


def _age(text: str | float) -> float:
    """`7d`, `12h`, `30m`, `2w`, `0`: an age in seconds."""
    if isinstance(text, (int, float)):  # the default
        return float(text)
    match = _AGE.fullmatch(text)
    if not match:
        raise typer.BadParameter(f"{text!r} is not an age: write it as 7d, 12h, 30m, 2w or 0")
    return float(match[1]) * _SECONDS[match[2].lower()]


def check(
    archive: ArchiveDir = Path("archive"),
    older_than: Annotated[float, typer.Option(parser=_age, metavar="AGE", help="Check pages not checked for this long: 7d, 12h, 30m, 0 (all).", show_default="1d")] = 86400.0,
    concurrency: Concurrency = 16,
    per_host: PerHost = 2,
    delay: Delay = 1.0,
    timeout: Timeout = 30.0,
    site: Annotated[str | None, typer.Option(help="Only pages of this site (a host and its subdomains).")] = None,
    retries: Retries = 3,
    user_agent: UserAgent = None,
    header: Header = None,
    cookies: Cookies = None,
    seed: Annotated[str | None, typer.Option(help="Only pages this reading list links (as `mirror links` names it).")] = None,
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
    with open_archive(archive, lock=True) as store:
        from ..store.health import pages_to_check

        urls = pages_to_check(store.db, older_than=older_than, site=site, seed=seed)
    if not urls:
        err.print(_nothing_to_check(archive, older_than, site, seed))
        if as_json:
            print_json({"checked": 0, "states": {}, "pages": [], "health": _health(archive)})
        return
    summary = _run_fetch(archive, options, None, set(urls))
    report = _report(archive, summary, set(urls))
    if as_json:
        print_json(report)
    else:
        _tell(report)
    if fail_on_rot and any(report["states"].get(state) for state in _ROT):
        raise typer.Exit(RotFound)


def _report(archive: Path, summary: Summary, urls: set[str]) -> dict:
    """What the check found: counts by state, the pages that are not unchanged, link health."""
    from ..store.health import link_health

    with open_archive(archive) as store:
        rows = store.db.execute(
            "select page_url, state, changed, note, captured_at from versions where id in "
            "(select max(id) from versions where page_url in (select value from json_each(?)) group by page_url)",
            [json.dumps(sorted(urls))],
        ).fetchall()
        health = link_health(store.db)
    pages = [{"url": url, "state": state, "changed": changed, "note": note, "at": at}
             for url, state, changed, note, at in rows if state != VersionState.SAME]
    return {"checked": summary.done, "states": dict(summary.versions), "elapsed_seconds": round(summary.elapsed, 3),
            "pages": sorted(pages, key=lambda p: (_ORDER.index(VersionState(p["state"])), p["url"])), "health": health}


def _health(archive: Path) -> list[dict]:
    from ..store.health import link_health

    with open_archive(archive) as store:
        return link_health(store.db)


def _tell(report: dict) -> None:
    states = report["states"]
    counts = ", ".join(f"{states[s]} {_WORDS.get(s, str(s).replace('_', ' '))}" for s in _ORDER if states.get(s))
    err.print(f"checked {report['checked']} pages: {counts or 'nothing recorded'}")
    for page in report["pages"][:30]:
        state = VersionState(page["state"])
        how = f" ({page['changed']:.0%} of the text)" if state == VersionState.CHANGED and page["changed"] is not None else ""
        note = f": {safe(page['note'])[:120]}" if page["note"] and state != VersionState.CHANGED else ""
        err.print(f"  {_WORDS.get(state, str(state).replace('_', ' '))}{how}  {safe(page['url'])}{note}")
    if len(report["pages"]) > 30:
        err.print(f"  … and {len(report['pages']) - 30} more (--json lists them all)")


def _nothing_to_check(archive: Path, older_than: float, site: str | None, seed: str | None) -> str:
    with open_archive(archive) as store:
        pages = store.db.execute("select count(*) from pages where status != 'skipped'").fetchone()[0]
    if not pages:
        return "nothing to check: the archive has no pages yet (`mirror fetch` first)"
    if (site or seed) and not _matching(archive, site, seed):
        which = " and ".join(x for x in (f"site {safe(site)!r}" if site else "", f"reading list {safe(seed)!r}" if seed else "") if x)
        fail(f"no page of the {which} is in this archive (`mirror links` names the reading lists)", code=2)
    if site or seed:
        which = " and ".join(x for x in (f"site {safe(site)!r}" if site else "", f"reading list {safe(seed)!r}" if seed else "") if x)
        return f"nothing to check for {which}: no page of it is due (checked in the last {_readable_age(older_than)}, or none there)"
    return f"nothing to check: every page was checked in the last {_readable_age(older_than)} (--older-than 0 checks them all)"


def _matching(archive: Path, site: str | None, seed: str | None) -> int:
    from ..store.health import pages_matching

    with open_archive(archive) as store:
        return pages_matching(store.db, site=site, seed=seed)


def _readable_age(seconds: float) -> str:
    for unit, size in (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}" if n != 1 else unit
    return f"{seconds:g} seconds"

