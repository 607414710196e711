"""What `mirror check` asks and says: the age a check looks back (`parse_age`), and its report
(counts by state, the pages that are not unchanged, link health), or why there was nothing to
check. The check itself is a fetch run in check mode, which the command line drives."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from .._enums import VersionState
from .link_health import link_health, pages_matching

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["ORDER", "ROT", "AgeError", "parse_age", "readable_age", "report", "why_nothing"]

_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
ROT = (VersionState.GONE, VersionState.SOFT_404, VersionState.BLOCKED)
ORDER = (
    VersionState.SAME,
    VersionState.CHANGED,
    VersionState.MOVED,
    VersionState.GONE,
    VersionState.SOFT_404,
    VersionState.NEEDS_BROWSER,
    VersionState.BLOCKED,
    VersionState.FAILED,
    VersionState.FIRST,
)


class AgeError(ValueError):
    """Not an age (the message is for the user)."""


def parse_age(text: str | float) -> float:
    """`7d`, `12h`, `30m`, `2w`, `0`: an age in seconds."""
    if isinstance(text, (int, float)):  # the default
        return float(text)
    match = _AGE.fullmatch(text)
    if not match:
        raise AgeError(f"{text!r} is not an age: write it as 7d, 12h, 30m, 2w or 0")
    return float(match[1]) * _SECONDS[match[2].lower()]


def report(db: sqlite_utils.Database, urls: set[str], checked: int, states: dict, elapsed: float) -> dict:
    """What the check of `urls` found: counts by state, the pages that are not unchanged, link health."""
    rows = db.execute(
        "select page_url, state, changed, note, captured_at from versions where id in "
        "(select max(id) from versions where page_url in (select value from json_each(?)) group by page_url)",
        [json.dumps(sorted(urls))],
    ).fetchall()
    pages = [
        {"url": url, "state": state, "changed": changed, "note": note, "at": at}
        for url, state, changed, note, at in rows
        if state != VersionState.SAME
    ]
    return {
        "checked": checked,
        "states": states,
        "elapsed_seconds": round(elapsed, 3),
        "pages": sorted(pages, key=lambda p: (ORDER.index(VersionState(p["state"])), p["url"])),
        "health": link_health(db),
    }


def why_nothing(db: sqlite_utils.Database, older_than: float, site: str | None, seed: str | None) -> tuple[str, bool]:
    """Why a check found no page to ask again, and whether that is a mistake of the user's (a site
    or reading list that no page of the archive is of)."""
    pages = db.execute("select count(*) from pages where status != 'skipped'").fetchone()[0]
    if not pages:
        return "nothing to check: the archive has no pages yet (`mirror fetch` first)", False
    which = " and ".join(x for x in (f"site {site!r}" if site else "", f"reading list {seed!r}" if seed else "") if x)
    if (site or seed) and not pages_matching(db, site=site, seed=seed):
        return f"no page of the {which} is in this archive (`mirror links` names the reading lists)", True
    if site or seed:
        return f"nothing to check for {which}: no page of it is due (checked in the last {readable_age(older_than)}, or none there)", False
    return f"nothing to check: every page was checked in the last {readable_age(older_than)} (--older-than 0 checks them all)", False


def readable_age(seconds: float) -> str:
    for unit, size in (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}" if n != 1 else unit
    return f"{seconds:g} seconds"
