"""One page's fetch: its retries, its glued-URL repairs and the Wayback Machine's copy."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from .._types import Exchange, PageResult, PageToFetch, Reason, Source
from ..http.client import Client
from ..http.failures import backoff_delay
from ..http.gate import Reach
from .options import FetchOptions

__all__ = ["fetch_page", "page_reach", "with_retries"]


async def with_retries(
    get: Callable[[], Awaitable[Exchange]], retries: int, backoff: float, cap: float, timeout_retries: int | None = None
) -> list[Exchange]:
    """Every try at one request: again after a backoff (or Retry-After, up to `cap`) while
    retrying may help, at most `retries` more times, of which at most `timeout_retries` after a
    timeout (a hanging server costs a whole timeout each time). The last try is the outcome."""
    tries: list[Exchange] = []
    for attempt in range(retries + 1):
        tries.append(await get())
        if not tries[-1].retryable or attempt == retries:
            break
        if timeout_retries is not None and sum(t.error == Reason.TIMEOUT for t in tries) > timeout_retries:
            break
        await asyncio.sleep(backoff_delay(attempt, backoff, tries[-1].retry_after, cap))
    return tries


async def fetch_page(client: Client, page: PageToFetch, options: FetchOptions) -> PageResult:
    headers: dict[str, str] = {}
    if options.refresh and page.has_capture:
        if page.etag:
            headers["If-None-Match"] = page.etag
        if page.last_modified:
            headers["If-Modified-Since"] = page.last_modified
    held = not options.allow_private  # redirects no more private than the page as written
    reach = None if options.page_reach is None or options.allow_private else Reach(options.page_reach)
    attempts = await with_retries(
        lambda: client.get(page.url, headers, reach=reach, same_reach=held),
        options.retries,
        options.backoff,
        options.retry_after_cap,
        options.timeout_retries,
    )
    final = attempts[-1]
    if final.status == 404 and page.candidates:
        for candidate in page.candidates:  # a URL glued to the next word in the seed
            alternative = await client.get(candidate, reach=reach, same_reach=held)
            attempts.append(alternative)
            if alternative.ok:
                final = alternative
                break
    result = PageResult(page.url, final, attempts)
    if not final.ok and options.wayback and not page.has_capture:
        await _wayback(client, options, result)
    return result


async def _wayback(client: Client, options: FetchOptions, result: PageResult) -> None:
    """Archive the Internet Archive's closest snapshot of a page that failed."""
    api = options.wayback_api.rstrip("/") + "/wayback/available?url=" + quote(result.url, safe="")
    try:
        answer = await client.get_json(api)
        closest = answer["archived_snapshots"]["closest"]
        if not closest.get("available", True) or not closest.get("url"):
            return
    except Exception:  # noqa: BLE001 - no snapshot is just no snapshot
        return
    # The id_ flag asks for the page as captured, without the Wayback toolbar.
    snapshot = re.sub(r"/web/(\d+)(?:[a-z_]*)/", r"/web/\1id_/", closest["url"], count=1)
    exchange = await client.get(snapshot)
    result.attempts.append(exchange)
    if exchange.ok:
        result.final = exchange
        result.source = Source.WAYBACK
        result.wayback_timestamp = str(closest.get("timestamp") or "") or None


async def page_reach(client: Client, final_url: str, options: FetchOptions) -> Reach:
    """How private the addresses a page's resources may come from are: no more than the page's own."""
    if options.allow_private:
        return Reach.LOOPBACK
    reach = await client.reach_of(final_url)
    return reach if isinstance(reach, Reach) else Reach.PUBLIC


def internal_failure(url: str, exc: Exception) -> PageResult:
    failed = Exchange(
        url=url, final_url=url, error=Reason.INTERNAL, message=f"internal error: {type(exc).__name__}: {str(exc)[:300]}", started_at=time.time()
    )
    return PageResult(url, failed, [failed])
