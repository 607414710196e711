"""Bulk inserts on a second thread: SQLite stores one chunk of rows while Python builds the next.

Python's sqlite3 holds the GIL to bind every row of an `executemany`, so a writer thread
running one would stall the thread building rows (and be stalled by it). Here a chunk is one
statement reading a JSON array (`json_each`): SQLite steps through all of it with the GIL
released, on the machine's second core. Same connection, same transaction as the caller's.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from itertools import islice
from types import TracebackType
from typing import NamedTuple

__all__ = ["BulkWriter"]

_CHUNK = 20_000  # rows per statement: big enough to amortize, small enough to start soon
_QUEUED = 64  # chunks waiting: lets the builder run well ahead (1e6 rows), in bounded memory
# item i of a row's JSON array as an SQL value: ->> came with SQLite 3.38, json_extract before it
_ITEM = "value ->> {}" if sqlite3.sqlite_version_info >= (3, 38) else "json_extract(value, '$[{}]')"


class _Job(NamedTuple):
    sql: str
    params: Sequence[object] = ()  # the statement's
    rows: list[tuple[object, ...]] | None = None  # or rows to run it for, one by one


class BulkWriter:
    """`insert()` queues; the rows are in the table once the `with` block has ended.

    An error of the writer thread is raised by the next `insert()` or at the end of the
    block; an error in the block stops the writer (what it queued is not written) and
    propagates. Either way the thread has ended when the block has.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=_QUEUED)
        self._error: BaseException | None = None
        self._cancelled = False
        self._thread = threading.Thread(target=self._run, name="mirror-bulk-insert", daemon=True)

    def __enter__(self) -> BulkWriter:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._cancelled = exc is not None
        self._jobs.put(None)  # never blocks for long: the writer takes every job, even after an error
        self._thread.join()
        if exc is None and self._error is not None:
            raise self._error

    def insert(self, verb: str, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]], fixed: dict[str, object] | None = None) -> None:
        """`verb` ("insert", "insert or ignore") the rows into `columns` of `table`, each row
        followed by the `fixed` values (one for every row)."""
        fixed = fixed or {}
        names = ", ".join(f"[{name}]" for name in [*columns, *fixed])
        params = [f"?{i + 2}" for i in range(len(fixed))]
        values = [_ITEM.format(i) for i in range(len(columns))]
        from_json = f"{verb} into [{table}] ({names}) select {', '.join(values + params)} from json_each(?1)"
        row_by_row = f"{verb} into [{table}] ({names}) values ({', '.join('?' for _ in [*columns, *fixed])})"
        rows = iter(rows)
        while chunk := list(islice(rows, _CHUNK)):
            if self._error is not None:
                raise self._error
            text = json.dumps(chunk, ensure_ascii=False)
            if "\\u0000" in text:  # SQLite's JSON strings end at a NUL: bind those rows one by one
                self._jobs.put(_Job(row_by_row, rows=[(*row, *fixed.values()) for row in chunk]))
            else:
                self._jobs.put(_Job(from_json, [text, *fixed.values()]))

    def execute(self, sql: str) -> None:
        """One statement after the rows queued before it (an index to build over them)."""
        if self._error is not None:
            raise self._error
        self._jobs.put(_Job(sql))

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self._error is not None or self._cancelled:
                continue  # drained, so that insert() and __exit__ never wait on a full queue
            try:
                if job.rows is not None:  # rows with a NUL, one by one
                    self._conn.executemany(job.sql, job.rows)
                else:
                    self._conn.execute(job.sql, job.params)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                self._error = exc
