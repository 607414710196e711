"""The archive: a folder of WARC files and one ordinary SQLite file, `DIR/mirror.db`.

Split by concern:

    folder     where the archive is, the fetch lock, WARC repair
    schema     tables, migrations, opening read-write or read-only
    writers    rows written by the runs: each page's fetch, extraction, render and resources
    inventory  the links of the seeds read and the pages they name (mixed into the writers)
    identity   duplicates: which capture is another link's article, which page is the original
    _sql       the hot paths' plain-SQL row writes
    _bulk      bulk inserts on a second thread
    queries    reads, shared by the CLI and the plugin
    versions   every capture a version, and what it found
    health     what a check asks again, and link health
The search index's layout is `mirror._fts` (search reads it too); re-extraction is a run (`mirror.fetch.reextract`).
"""

from __future__ import annotations

import os
import sqlite3
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .._types import PageToFetch
from .folder import ArchiveError, ArchiveFolder, ArchiveLocked, check_folder, now
from .queries import PipelineReads
from .schema import DB_NAME, FACETS_INDEX, needs_migration, open_db
from .writers import InventoryStats, RowWriters

if TYPE_CHECKING:
    import sqlite_utils

__all__ = [
    "DB_NAME",
    "FACETS_INDEX",
    "Archive",
    "ArchiveError",
    "ArchiveLocked",
    "InventoryStats",
    "PageToFetch",
    "now",
]


def _writable(folder: Path, db_path: Path) -> bool:
    """Whether a command can write the archive (SQLite needs the folder too, for its journal)."""
    return os.access(folder, os.W_OK) and (not db_path.exists() or os.access(db_path, os.W_OK))


class Archive(ArchiveFolder, RowWriters, PipelineReads):
    """An archive folder and its database.

    `readonly`: for search, show and serve. Nothing is written, so it works on an
    archive in a read-only folder; an archive from an older mirror is migrated
    first where it can be written.
    """

    def __init__(self, path: Path | str, *, create: bool = True, readonly: bool = False):
        self.path = Path(path)
        self.db_path = self.path / DB_NAME
        self.adopted: list[str] = []  # pages that became duplicates of a page recorded after them (see RowWriters._adopt)
        self.released: list[str] = []  # duplicates that became the original when theirs stopped being an article
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

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
