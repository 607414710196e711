"""Where a run's requests and extractions are carried out: in this process (`LOCAL`: one HTTP
client, a pool of extraction processes), or on a cluster (`mirror.cluster` makes an engine whose
client sends each server's requests to the worker that owns it, and whose pool runs extractions
as cluster tasks). Everything else of a run, recovery, retries, recording, the summary, is the
same code either way: the engine only decides where the work goes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import warc
from ..extract.pool import StoppableExecutor, extraction_pool
from ..http.client import Client

if TYPE_CHECKING:
    from .._types import PageToFetch

__all__ = ["LOCAL", "Engine"]


class Engine(Protocol):
    def pool(self, workers: int | None) -> StoppableExecutor:
        """Where extractions run: `submit(function, *args)` gives a future; `kill_workers()` stops
        those under way (a stopped run records none of them), `shutdown` as an Executor's."""
        ...

    def writer(self, archive_dir: Path, rotate_bytes: int, info: dict[str, str] | None = None) -> warc.CaptureWriter:
        """The WARC files of the run: written, or (on a cluster) the files the workers wrote,
        listed in `opened` and `unfinished` once the client is closed."""
        ...

    def client(self, writer: warc.CaptureWriter, pages: list[PageToFetch], settings: dict[str, Any]) -> Client:
        """The run's HTTP client (`settings`: `Client`'s keywords) for these pages."""
        ...


class _Local:
    """One process: the client and its WARC writer here, extraction in spawned processes."""

    def pool(self, workers: int | None) -> StoppableExecutor:
        return extraction_pool(workers)

    def writer(self, archive_dir: Path, rotate_bytes: int, info: dict[str, str] | None = None) -> warc.CaptureWriter:
        return warc.CaptureWriter(archive_dir, rotate_bytes=rotate_bytes, info=info)

    def client(self, writer: warc.CaptureWriter, pages: list[PageToFetch], settings: dict[str, Any]) -> Client:
        return Client(writer, **settings)


LOCAL: Engine = _Local()
