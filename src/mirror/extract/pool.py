"""The extraction processes: trafilatura's CPU work, away from the fetcher's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar

from .._types import Extraction, PageStatus, WarcLocation

__all__ = ["EXTRACT_TIMEOUT", "ExtractionPool", "StoppableExecutor", "extraction_pool", "in_pool", "run_extraction", "safe_extract"]

T = TypeVar("T")


def extraction_pool(workers: int | None = None) -> ExtractionPool:
    """Worker processes for trafilatura.

    Spawned, not forked: the fetcher has threads (DNS lookups) that a fork
    could catch holding a lock. Each worker watches its parent and leaves
    when it is gone, so a kill -9 of `mirror fetch` leaves no orphans.
    A spawned worker starts as `python -c …`, which puts the working folder first on
    its path: a `pickle.py` in a cloned reading-list repository would run as code.
    PYTHONSAFEPATH (Python 3.11's `-P`) keeps it off.
    """
    os.environ["PYTHONSAFEPATH"] = "1"
    return ExtractionPool(workers or os.cpu_count() or 1)


class StoppableExecutor(Executor):
    """An Executor whose work under way can be stopped at once (`kill_workers`): a stopped run
    records none of it. The run's own pools are these (processes here, tasks on a cluster)."""

    def kill_workers(self) -> None:
        raise NotImplementedError


class ExtractionPool(ProcessPoolExecutor, StoppableExecutor):
    """Workers that ignore Ctrl-C: the terminal sends SIGINT to the whole process group, and a
    worker would print its KeyboardInterrupt traceback over the clean line `mirror fetch` prints.
    The parent stops them itself. A worker starts with SIGINT blocked (the mask is inherited
    through fork and exec), from its first import on, until it ignores it: the parent blocks it
    while it submits, which is when the pool starts a worker it lacks. Not by ignoring it: a
    Ctrl-C in that moment was lost (the parent ran on to the end); here it is noted and raised
    again once the work is submitted (outside `submit`: the pool would be left half set up, its
    new worker orphaned). Public API only: the pool's workers are the children that appeared
    while it submitted (`multiprocessing.active_children`)."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_exit_with, initargs=(os.getpid(),))
        self.workers = workers
        self.started: set[BaseProcess] = set()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if len(self.started) >= self.workers:  # (all started: a submit starts none)
            return super().submit(fn, *args, **kwargs)
        before = set(multiprocessing.active_children())
        came: list[int] = []
        main = threading.current_thread() is threading.main_thread()  # (signal handlers are the main thread's)
        if main:
            previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))  # (another thread may take it)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            future = super().submit(fn, *args, **kwargs)
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (one held meanwhile is noted now)
                signal.signal(signal.SIGINT, previous)
            self.started.update(set(multiprocessing.active_children()) - before)
        if came:
            signal.raise_signal(signal.SIGINT)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As ProcessPoolExecutor's; a Ctrl-C while it waits for the extractions under way (a
        second one, the first having stopped the run) stops the workers at once: they were
        waited for, until each had finished the calls already queued to it (a minute for a few
        long pages), whatever the user pressed."""
        try:
            super().shutdown(wait=wait, cancel_futures=cancel_futures)
        except KeyboardInterrupt:
            self.kill_workers()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        if kind is not None:  # stopped (Ctrl-C, an error): what the workers are doing would not be used
            self.kill_workers()
        return super().__exit__(kind, exc, tb)

    def kill_workers(self) -> None:
        """Kill every worker, its extraction with it (Python 3.14 has this method)."""
        for process in list(self.started):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()


async def in_pool(pool: Executor, function, *args):
    """`function(*args)` in a worker, awaited without tying the worker's call to the awaiting task.

    `run_in_executor` cancels the pool's future when the task awaiting it is cancelled (a Ctrl-C
    stops every page). If the workers are then killed, the pool's own thread sets the broken
    pool's error on every future it still holds, the cancelled ones too, which Python 3.11
    refuses: "Exception in thread" and a traceback over the clean exit. Here the pool's future is
    never cancelled (`shield`); its outcome, once the task is gone, is retrieved and dropped."""
    waited = asyncio.wrap_future(pool.submit(function, *args))
    waited.add_done_callback(_retrieved)
    return await asyncio.shield(waited)


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # (retrieved: nobody may be waiting any more)


def _exit_with(parent: int) -> None:
    """In a worker: leave as soon as `mirror fetch` is gone (kill -9 leaves no orphans); Ctrl-C
    is the parent's to handle (a worker started by the pool's own thread did not inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:  # a dead parent's children are adopted at once, even before it is reaped
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def run_extraction(archive_dir: str, location: WarcLocation, url: str, stylesheets: bool = False) -> Extraction:
    """`extract.extract_capture`, imported in the worker: the fetching process never loads
    trafilatura (~0.4 s of CPU)."""
    from .article import extract_capture

    return extract_capture(archive_dir, location, url, stylesheets)


EXTRACT_TIMEOUT = 30.0  # seconds for one page's extraction (a page of the web takes ~0.05)


class _Deadline(BaseException):
    """An extraction ran past its deadline. A BaseException: no `except Exception` of
    trafilatura's or ours may swallow it."""


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise _Deadline in this thread after `seconds` (an interval timer: the worker runs its
    tasks in its main thread, and Python code is interrupted between two bytecodes).
    Elsewhere than a process's main thread, no deadline."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame) -> None:
        raise _Deadline

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_WARM_PAGE = b"<html><head><title>warm</title></head><body><article><h1>warm</h1><p>A few words.</p></article></body></html>"


@functools.cache
def _warm() -> None:
    """Once per worker: trafilatura imported and a small page extracted, outside any deadline
    (a failure here is the real page's to report)."""
    from .article import extract

    with contextlib.suppress(Exception):
        extract(_WARM_PAGE, "http://localhost/", "text/html")


def safe_extract(
    archive_dir: str, location: WarcLocation, url: str, stylesheets: bool = False, timeout: float | None = EXTRACT_TIMEOUT
) -> Extraction:
    """Extraction never takes the run down: a failure is a page without text, with a note.

    trafilatura is roughly quadratic on pages of many small blocks (a few MB of them take
    minutes): past `timeout` seconds, the page's plain text is its article instead
    (`extract.extract_plain`, linear), with a note saying so. The deadline is the extraction's:
    a worker's first page does not count the import of trafilatura nor what its first extraction
    loads (a second or more on a busy machine, 40 times a small page's cost), done before it starts."""
    _warm()

    try:
        with _deadline(timeout):
            return run_extraction(archive_dir, location, url, stylesheets)
    except _Deadline:
        note = f"the full extraction took longer than {timeout:g} s; the article is the page's plain text"
        try:
            with _deadline(timeout):
                from .article import extract_plain_capture

                result = extract_plain_capture(archive_dir, location)
        except _Deadline:
            result = Extraction(status=PageStatus.NO_TEXT, kind="html")
            note = f"extraction took longer than {timeout:g} s, and so did reading the page's plain text"
        except Exception as exc:  # noqa: BLE001
            result = Extraction(status=PageStatus.NO_TEXT, kind="html")
            note += f" (which failed: {type(exc).__name__}: {exc})"
        result.note = note
        return result
    except Exception as exc:  # noqa: BLE001
        return Extraction(status=PageStatus.NO_TEXT, kind="other", note=f"extraction failed: {type(exc).__name__}: {str(exc)[:300]}")
