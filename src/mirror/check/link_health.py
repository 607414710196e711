"""Link health, a link's state over time (not `http.host_health`, the hosts down for one run):
which pages a check asks again, what each reading list's links are now (alive, changed, moved,
gone, soft 404, blocked, saved only from the Wayback Machine) and since when, and a page's
versions. Functions take a `sqlite_utils.Database`, as `store.queries` do; the store makes the
view (`HEALTH_VIEW`) from `LINK_HEALTH_SQL`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .._enums import PageStatus

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["HEALTH_VIEW", "LINK_HEALTH_SQL", "link_health", "pages_to_check", "site_filter", "version_capture", "version_of", "versions_of"]

HEALTH_VIEW = "link_health"
HEALTH_INDEX = "pages_link_health"  # what the view reads of a page
_CENTURY = 100 * 365 * 86400.0  # an age past this is "ever"
# per reading list, how many of its links are in each state, and since when (the earliest); each
# page's state read from an index (HEALTH_INDEX), not from its row, which SQLite's planner
# would otherwise do (a lookup by url takes the primary key's index first). Grouped by the
# result's columns (1, 2): `group by health` would name the pages' own column, and `first` and
# `same` would be two `alive` rows of one list. A page never archived that failed is `failed`
# (a 404 included), as the list view says: `gone` is a page archived that went.
LINK_HEALTH_SQL = f"""
select links.seed as reading_list,
       case when pages.status = 'skipped' then 'not a web page'
            when pages.status = 'pending' then 'not fetched yet'
            when pages.source = 'wayback' then 'wayback only'
            when pages.health in ('first', 'same') or (pages.health is null and pages.warc_file is not null) then 'alive'
            when pages.health is null or (pages.health = 'gone' and pages.warc_file is null) then 'failed'
            else pages.health end as health,
       count(distinct pages.url) as links,
       min(pages.health_since) as since
from links join pages indexed by {HEALTH_INDEX} on pages.url = links.url
group by 1, 2
"""


def pages_to_check(
    db: sqlite_utils.Database, *, older_than: float, site: str | None = None, seed: str | None = None, pending: bool = False
) -> list[str]:
    """The pages a check asks again: those not checked for `older_than` seconds (a check stopped
    halfway resumes where it stopped), archived or tried and never archived, that some reading
    list links (`seed`'s, when given), on `site` (a host and its subdomains) when given. Never a
    `pending` page (unless `pending`): a check checks what was fetched, and a page never fetched
    is `mirror fetch`'s (an offline check would otherwise fail it, and fetch skip it)."""
    cutoff = (datetime.now(UTC) - timedelta(seconds=max(-_CENTURY, min(older_than, _CENTURY)))).isoformat(timespec="seconds")
    where = [f"status not in ({', '.join('?' * (1 if pending else 2))})", "(checked_at is null or checked_at <= ?)"]
    values: list[object] = [PageStatus.SKIPPED, *([] if pending else [PageStatus.PENDING]), cutoff]
    if seed is not None:
        where.append("exists (select 1 from links where links.url = pages.url and links.seed = ?)")
        values.append(seed)
    else:
        where.append("exists (select 1 from links where links.url = pages.url)")
    if site is not None:
        condition, params = site_filter(site)
        where.append(condition)
        values += params
    rows = db.execute(f"select url from pages where {' and '.join(where)} order by checked_at is not null, checked_at, id", values)
    return [row[0] for row in rows]


def site_filter(site: str) -> tuple[str, list[str]]:
    """The SQL condition on `pages.host` for a site and its subdomains (no LIKE wildcards), and its values."""
    site = _ascii_site(site)
    return "(host = ? or host = ? or host like ? escape '\\')", [site, f"www.{site}", "%." + re.sub(r"([%_\\])", r"\\\1", site)]


def _ascii_site(site: str) -> str:
    """A site as hosts are stored: lower case, IDNA's ASCII form (`中文.example` is `xn--fiq228c.example`)."""
    site = site.lower().strip().strip(".").removeprefix("www.")
    try:
        return site.encode("idna").decode("ascii")
    except UnicodeError:
        return site


def pages_matching(db: sqlite_utils.Database, *, site: str | None = None, seed: str | None = None) -> int:
    """How many pages `site` and `seed` select, checked or not, fetched or not (none: the user mistyped one)."""
    return len(pages_to_check(db, older_than=-_CENTURY, site=site, seed=seed, pending=True))


def link_health(db: sqlite_utils.Database) -> list[dict]:
    """Per reading list and state: how many links, since when."""
    return [dict(row) for row in db.query(f"select * from {HEALTH_VIEW} order by reading_list, links desc")]


def versions_of(db: sqlite_utils.Database, url: str) -> list[dict]:
    """A page's versions, newest first."""
    return list(db.query("select * from versions where page_url = ? order by id desc", [url]))


def version_of(db: sqlite_utils.Database, page_id: int, version_id: int) -> dict | None:
    """One version of the page `page_id` (None: no such version of that page)."""
    return next(
        db.query(
            "select versions.* from versions join pages on pages.url = versions.page_url where pages.id = ? and versions.id = ?",
            [page_id, version_id],
        ),
        None,
    )


def version_capture(db: sqlite_utils.Database, version: dict) -> dict | None:
    """The response record that holds a version's payload: its own, or for a revisit the
    version whose bytes it repeats (None: the check got no answer worth keeping)."""
    if version.get("revisit_of"):
        revisited = next(db.query("select * from versions where id = ?", [version["revisit_of"]]), None)
        version = revisited or {}
    return version if version.get("warc_file") else None
