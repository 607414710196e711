"""Extraction as Ray tasks, behind the Executor interface the run and `mirror reindex` already
submit to: the same `safe_extract` runs on whichever node has a CPU free, and reads its capture
from the shared archive folder."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import wait as wait_for

from ..extract.pool import StoppableExecutor

__all__ = ["RETRIES", "RayExecutor"]

RETRIES = 3  # a task whose worker died (a node lost, a process killed) runs again elsewhere; an extraction has no side effects


class RayExecutor(StoppableExecutor):
    """`submit(function, *args)` as a Ray task of one CPU; its future is Ray's own (`ObjectRef.future`)."""

    def __init__(self, ray):
        self._ray = ray
        self._remote: dict = {}  # function -> its Ray task
        self._under_way: dict = {}  # ObjectRef -> its future, until it is done
        self._lock = threading.Lock()  # (futures complete on Ray's threads)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        task = self._remote.get(fn)
        if task is None:
            task = self._remote[fn] = self._ray.remote(num_cpus=1, max_retries=RETRIES)(fn)
        ref = task.remote(*args, **kwargs)
        future = ref.future()
        with self._lock:
            self._under_way[ref] = future
        future.add_done_callback(lambda _, ref=ref: self._done(ref))
        return future

    def _done(self, ref) -> None:
        with self._lock:
            self._under_way.pop(ref, None)

    def _refs(self) -> list:
        with self._lock:
            return list(self._under_way)

    def kill_workers(self) -> None:
        """Stop every task under way, its worker process with it (a stopped run records none of them)."""
        for ref in self._refs():
            self._ray.cancel(ref, force=True)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:  # those not started yet; the running ones finish
            for ref in self._refs():
                self._ray.cancel(ref)
        if wait:
            with self._lock:
                futures = list(self._under_way.values())
            wait_for(futures)

    def __exit__(self, kind, exc, tb):
        if kind is not None:  # stopped (Ctrl-C, an error): what the tasks are doing would not be used
            self.kill_workers()
        return super().__exit__(kind, exc, tb)
