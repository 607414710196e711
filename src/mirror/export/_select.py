"""Which archived pages an export takes: those a reading list links, of a site, captured since a date."""

from __future__ import annotations

from collections.abc import Iterator

from .._enums import PageStatus
from ..check.link_health import site_filter


def archived_pages(db, columns: str, *, seed: str | None = None, site: str | None = None, since: str | None = None) -> Iterator[dict]:
    """`columns` of the archived pages `seed` links, of `site` (a host and its subdomains), captured
    `since` an ISO date; all of them for none, by page id."""
    where, values = ["status = ?"], [PageStatus.ARCHIVED.value]
    if seed:
        where.append("exists (select 1 from links where links.url = pages.url and links.seed = ?)")
        values.append(seed)
    if site:
        condition, params = site_filter(site)
        where.append(condition)
        values += params
    if since:
        where.append("fetched_at >= ?")
        values.append(since)
    yield from db.query(f"select {columns} from pages where {' and '.join(where)} order by id", values)
