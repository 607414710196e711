"""Recovering responses that a crashed run wrote to WARC but never recorded.

A response is flushed to its WARC file before the database points at it, so a
kill -9 in between leaves a complete capture that nobody knows about. The next
run reads the files the crashed run left open and saves those pages from them
(extracted and indexed) instead of fetching them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urljoin

from .. import warc
from .._types import Exchange, Extraction, PageToFetch
from ..http.blocked import blocked_reason
from ..http.body import is_htmlish
from ..store import Archive

Extract = Callable[[warc.WarcLocation, str], Awaitable[Extraction]]


class Recovered(NamedTuple):
    """A page whose capture a crashed run left in the files, read back."""

    page: PageToFetch
    capture: Exchange  # the last attempt, from its records
    article: Extraction | None


async def recover(archive: Archive, files: list[Path], pages: list[PageToFetch], extract: Extract) -> list[Recovered]:
    """Pages among `pages` (never captured yet) whose final response is in `files`."""
    wanted = {page.url: page for page in pages if not page.has_capture}
    if not wanted or not files:
        return []
    found = await asyncio.to_thread(_final_responses, archive.path, files, set(wanted))
    results = await asyncio.gather(*(_recovered(archive, wanted[url], chain, extract) for url, chain in found.items()))
    return [r for r in results if r is not None]


def _final_responses(archive_dir: Path, files: list[Path], wanted: set[str]) -> dict[str, list[warc.Response]]:
    """page -> its last attempt's chain of responses (redirect hops, then the final answer)."""
    chains: dict[str, list[warc.Response]] = {}
    for path in files:
        for response in warc.responses(path):
            if response.page not in wanted:
                continue
            chain = chains.setdefault(response.page, [])
            if chain and not _leads_to(chain[-1], response.url):
                chain.clear()  # a new attempt
            chain.append(response)
    return {page: chain for page, chain in chains.items() if _usable(archive_dir, chain)}


def _leads_to(previous: warc.Response, url: str) -> bool:
    target = previous.headers.get_header("Location")
    return 300 <= previous.status < 400 and bool(target) and urljoin(previous.url, target.strip()) == url


def _usable(archive_dir: Path, chain: list[warc.Response]) -> bool:
    """A whole, successful answer that is the page itself (not a sign-in or anti-bot wall)."""
    final = chain[-1]
    if chain[0].url != final.page or final.truncated or not 200 <= final.status < 300:
        return False
    content_type = final.headers.get_header("Content-Type")
    if not is_htmlish(content_type):
        return True
    try:
        _, body = warc.read_head(archive_dir, final.location, 64 * 1024)
    except Exception:  # noqa: BLE001 - unreadable: fetch it again
        return False
    head = body.decode("utf-8", errors="replace")
    return blocked_reason(final.status, final.url, final.page, head) is None


async def _recovered(archive: Archive, page: PageToFetch, chain: list[warc.Response], extract: Extract) -> Recovered:
    final = chain[-1]
    try:
        started = datetime.fromisoformat(final.date.replace("Z", "+00:00")).timestamp()
    except ValueError:
        started = 0.0
    exchange = Exchange(
        url=page.url,
        final_url=final.url,
        status=final.status,
        redirects=[r.url for r in chain[1:]],
        content_type=final.headers.get_header("Content-Type"),
        etag=final.headers.get_header("ETag"),
        last_modified=final.headers.get_header("Last-Modified"),
        location=final.location,
        started_at=started,
    )
    article = await extract(final.location, final.url)
    return Recovered(page, exchange, article)
