"""The archive folder: where it is, who may fetch into it, and its WARC files after a crash."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


__all__ = ["ArchiveError", "ArchiveFolder", "ArchiveLocked", "now"]


class ArchiveError(Exception):
    """The archive folder or database cannot be used."""


class ArchiveLocked(ArchiveError):
    """Another `mirror fetch` holds this archive."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_folder(path: Path, *, create: bool) -> None:
    """Raise ArchiveError unless `path` is (or, with `create`, now is) an archive folder."""
    if not path.exists():
        if not create:
            raise ArchiveError(f"{path}: no archive here (run `mirror links` or `mirror fetch` first)")
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise ArchiveError(f"{path}: cannot create archive folder ({exc.strerror})") from exc
    elif not path.is_dir():
        raise ArchiveError(f"{path}: not a folder")


class ArchiveFolder:
    """The lock and the WARC files of an archive (mixed into `Archive`)."""

    path: Path
    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    @contextmanager
    def lock(self, wait: float = 0.0) -> Iterator[None]:
        """Exclusive right to write captures into this archive; refuses a second writer (after
        `wait` seconds: an upload waits for another upload, not for a whole fetch)."""
        path = self.path / ".fetch.lock"
        handle = open(path, "a+")
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                handle.close()
                raise ArchiveLocked(
                    f"{self.path}: another mirror fetch (pid {holder}) is running on this archive; wait for it to finish or stop it"
                ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def unclosed_warcs(self) -> list[Path]:
        """WARC files a run left open (it crashed or was stopped): they may end in a
        truncated record, and may hold responses the database does not point at yet."""
        from ..warc import WARC_DIR  # (warcio: only the runs need it)

        folder = self.path / WARC_DIR
        if not folder.is_dir():
            return []
        closed = {row["file"] for row in self.db.query("select file from warc_files where closed_at is not null")}
        return [p for p in sorted(folder.glob("*.warc.gz")) if p.name not in closed]

    def repair_warcs(self, suspects: list[Path] | None = None) -> list[tuple[Path, int]]:
        """Cut truncated tails off WARC files a crashed run left open. They stay
        unclosed until `mark_warcs_closed`, after their responses are recovered."""
        from ..warc import repair

        return repair(self.unclosed_warcs() if suspects is None else suspects)

    def mark_warcs_closed(self, files: list[str]) -> None:
        if files:
            with self.db.atomic():
                self.db.table("warc_files").upsert_all(({"file": f, "closed_at": now()} for f in files), pk="file")
