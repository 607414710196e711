"""An archive's database opened for reading or writing, and nothing else: what `mirror search`
needs, without the writers (and the seed parser they bring) that `Archive` adds."""

from __future__ import annotations

import os
import sqlite3
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Self

from .folder import ArchiveError, check_folder
from .schema import DB_NAME, needs_migration, open_db

if TYPE_CHECKING:
    import sqlite_utils


def _writable(folder: Path, db_path: Path) -> bool:
    """Whether a command can write the archive (SQLite needs the folder too, for its journal)."""
    return os.access(folder, os.W_OK) and (not db_path.exists() or os.access(db_path, os.W_OK))


class ArchiveReader:
    """An archive folder's database, opened (migrated first where it can be written).

    `readonly`: for search, show and serve. Nothing is written, so it works on an
    archive in a read-only folder; an archive from an older mirror is migrated
    first where it can be written.
    """

    def __init__(self, path: Path | str, *, create: bool = True, readonly: bool = False):
        self.path = Path(path)
        self.db_path = self.path / DB_NAME
        check_folder(self.path, create=create and not readonly)
        if not readonly and not _writable(self.path, self.db_path):
            raise ArchiveError(
                f"{self.path}: the archive is read-only. `mirror search`, `show` and `serve` read it as it is; "
                "links, fetch and reindex write to it: use a writable copy, or fix the folder's permissions"
            )
        if readonly and not self.db_path.is_file():
            raise ArchiveError(f"{self.db_path}: no archive here (run `mirror links` or `mirror fetch` first)")
        try:
            if readonly and needs_migration(self.db_path):
                try:
                    open_db(self.db_path).close()
                except sqlite3.OperationalError:
                    pass  # cannot be written: read it as it is
            self.conn = open_db(self.db_path, readonly=readonly)
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"{self.db_path}: cannot open database ({exc})") from exc

    @cached_property
    def db(self) -> sqlite_utils.Database:
        """The database as sqlite-utils sees it (imported on first use: search needs only `conn`)."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
