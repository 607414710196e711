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

__all__ = ["ORDER", "ROT", "AgeError", "parse_age", "readable_age", "report", "share", "state_word", "why_nothing"]

_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
ROT = (VersionState.GONE, VersionState.SOFT_404, VersionState.BLOCKED)
# a link is back when a check finds its page again (unchanged, changed or moved) after one of these
_DOWN = (*ROT, VersionState.FAILED)
_UP = (VersionState.SAME, VersionState.CHANGED, VersionState.MOVED)
_WORDS = {VersionState.SAME: "unchanged", VersionState.FIRST: "archived for the first time"}
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


def state_word(state: str) -> str:
    """A check's state as its report and its progress bar say it (`same` is `unchanged`)."""
    return _WORDS.get(VersionState(state), str(state).replace("_", " "))


def share(changed: float) -> str:
    """How much of a text changed, as a person reads it: `12%`, and a small edit never `0%`
    (`0.3%`, `<0.1%`)."""
    if changed >= 0.01:
        return f"{changed:.0%}"
    return f"{changed:.1%}" if changed >= 0.001 else "<0.1%"


def report(db: sqlite_utils.Database, urls: set[str], checked: int, states: dict, elapsed: float) -> dict:
    """What the check of `urls` found: counts by state, how many links are back (found again
    after they were gone, soft 404, blocked or failing), the pages that are not unchanged or that
    are back (`back_from`: what they were), link health."""
    rows = db.execute(
        "select page_url, state, changed, note, captured_at, before from ("
        "  select id, page_url, state, changed, note, captured_at, lag(state) over (partition by page_url order by id) as before"
        "  from versions where page_url in (select value from json_each(?))"
        ") where id in (select max(id) from versions where page_url in (select value from json_each(?)) group by page_url)",
        [json.dumps(sorted(urls))] * 2,
    ).fetchall()
    pages = []
    for url, state, changed, note, at, before in rows:
        back = before if state in _UP and before in _DOWN else None
        if state != VersionState.SAME or back:
            pages.append({"url": url, "state": state, "changed": changed, "note": note, "at": at, "back_from": back})
    return {
        "checked": checked,
        "states": states,
        "back": sum(1 for page in pages if page["back_from"]),
        "elapsed_seconds": round(elapsed, 3),
        "pages": sorted(pages, key=lambda p: (not p["back_from"], ORDER.index(VersionState(p["state"])), p["url"])),
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
    if not db.execute("select 1 from pages where status not in ('skipped', 'pending') limit 1").fetchone():
        return "nothing to check: no page has been fetched yet (a check checks what was fetched; `mirror fetch` fetches the pending pages)", False
    if site or seed:
        return f"nothing to check for {which}: no page of it is due (checked in the last {readable_age(older_than)}, or none there)", False
    return f"nothing to check: every page was checked in the last {readable_age(older_than)} (--older-than 0 checks them all)", False


def readable_age(seconds: float) -> str:
    for unit, size in (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}" if n != 1 else unit
    return f"{seconds:g} seconds"
