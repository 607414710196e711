"""`mirror reindex`: re-extract every capture from its WARC record, without the network."""

from __future__ import annotations

import contextlib
import os
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Executor

from .._types import CapturedPage, Extraction
from ..extract.pool import EXTRACT_TIMEOUT, safe_extract
from ..store import Archive
from .engine import LOCAL, Engine

__all__ = ["reindex"]

BATCH = 200  # pages per transaction
AHEAD = 8  # extractions queued per worker: the pool stays busy, and a million pages are not held at once


def reindex(
    archive: Archive, workers: int | None = None, extract_timeout: float = EXTRACT_TIMEOUT, pool: Executor | None = None, engine: Engine = LOCAL
) -> dict[str, int]:
    """Re-extract every captured page (after a trafilatura upgrade, say) and re-index it
    (the workers segment the text for the index); then index the archived pages left.
    The extractions run in `pool` when one is given, as `fetch.run` (the caller keeps it; the
    archive is named to it by its absolute path), else where `engine` puts them (`workers` of
    them at a time: processes here, or the cluster's CPUs); the results are saved here, in order.

    Returns counts by resulting status, `indexed`, and `with images to fetch`: articles
    that now show images not archived yet, which the next `mirror fetch` fetches.
    """
    batch: list[tuple[str, Extraction]] = []
    images_due = 0
    pages = archive.captured_pages()
    with contextlib.ExitStack() as own:
        if pool is None:
            pool = own.enter_context(engine.pool(workers))
        for url, extraction in _extracted(pool, str(archive.path.absolute()), pages, extract_timeout, ahead=AHEAD * (workers or os.cpu_count() or 1)):
            batch.append((url, extraction))
            if len(batch) >= BATCH:
                images_due += archive.save_extractions(batch)
                batch = []
    images_due += archive.save_extractions(batch)
    counts = Counter(archive.statuses_of([url for url, _, _ in pages]))  # as saved: a duplicate is not counted as archived
    counts["indexed"] = archive.complete_index()
    if images_due:
        counts["with images to fetch"] = images_due
    return dict(counts)


def _extracted(pool: Executor, folder: str, pages: list[CapturedPage], extract_timeout: float, ahead: int) -> Iterator[tuple[str, Extraction]]:
    """(url, extraction) in the pages' order, with at most `ahead` submitted and not yet taken."""
    pending: deque = deque()
    for url, final, location in pages:
        pending.append((url, pool.submit(safe_extract, folder, location, final, False, extract_timeout)))
        if len(pending) >= ahead:
            url, future = pending.popleft()
            yield url, future.result()
    while pending:
        url, future = pending.popleft()
        yield url, future.result()
