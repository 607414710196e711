"""`mirror reindex`: re-extract every capture from its WARC record, without the network."""

from __future__ import annotations

from collections import Counter

from .._types import Extraction
from ..extract.pool import EXTRACT_TIMEOUT, extraction_pool, safe_extract
from ..store import Archive

__all__ = ["reindex"]

BATCH = 200  # pages per transaction


def reindex(archive: Archive, workers: int | None = None, extract_timeout: float = EXTRACT_TIMEOUT) -> dict[str, int]:
    """Re-extract every captured page (after a trafilatura upgrade, say) and re-index it
    (the workers segment the text for the index); then index the archived pages left.

    Returns counts by resulting status, `indexed`, and `with images to fetch`: articles
    that now show images not archived yet, which the next `mirror fetch` fetches.
    """
    batch: list[tuple[str, Extraction]] = []
    images_due = 0
    with extraction_pool(workers) as pool:
        futures = [
            (url, pool.submit(safe_extract, str(archive.path), location, final, False, extract_timeout))
            for url, final, location in archive.captured_pages()
        ]
        for url, future in futures:
            extraction = future.result()
            batch.append((url, extraction))
            if len(batch) >= BATCH:
                images_due += archive.save_extractions(batch)
                batch = []
    images_due += archive.save_extractions(batch)
    counts = Counter(archive.statuses_of([url for url, _ in futures]))  # as saved: a duplicate is not counted as archived
    counts["indexed"] = archive.complete_index()
    if images_due:
        counts["with images to fetch"] = images_due
    return dict(counts)
