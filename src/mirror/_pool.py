"""The extraction processes: trafilatura's CPU work, away from the fetcher's event loop."""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

from ._types import Extraction, PageStatus, WarcLocation

__all__ = ["extraction_pool", "run_extraction", "safe_extract"]


def extraction_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """Worker processes for trafilatura.

    Spawned, not forked: the fetcher has threads (DNS lookups) that a fork
    could catch holding a lock. Each worker watches its parent and leaves
    when it is gone, so a kill -9 of `mirror fetch` leaves no orphans.
    """
    return ProcessPoolExecutor(
        max_workers=workers or os.cpu_count() or 1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with,
        initargs=(os.getpid(),),
    )


def _exit_with(parent: int) -> None:
    """In a worker: leave as soon as `mirror fetch` is gone (kill -9 leaves no orphans)."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:  # a dead parent's children are adopted at once, even before it is reaped
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def run_extraction(archive_dir: str, location: WarcLocation, url: str, stylesheets: bool = False) -> Extraction:
    """`extract.extract_capture`, imported in the worker: the fetching process never loads
    trafilatura (~0.4 s of CPU)."""
    from .extract import extract_capture

    return extract_capture(archive_dir, location, url, stylesheets)


def safe_extract(archive_dir: str, location: WarcLocation, url: str, stylesheets: bool = False) -> Extraction:
    """Extraction never takes the run down: a failure is a page without text."""
    try:
        return run_extraction(archive_dir, location, url, stylesheets)
    except Exception as exc:  # noqa: BLE001
        return Extraction(status=PageStatus.NO_TEXT, kind="other", description=f"extraction failed: {type(exc).__name__}: {exc}")
