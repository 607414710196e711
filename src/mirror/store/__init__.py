"""The archive: a folder of WARC files and one ordinary SQLite file, `DIR/mirror.db`.

Split by concern:

    archive    the Archive: everything below as one object
    reader     its database opened (all `mirror search` needs)
    folder     where the archive is, the fetch lock, WARC repair
    schema     tables, migrations, opening read-write or read-only
    writers    rows written by the runs: each page's fetch, extraction, render and resources
    inventory  the links of the seeds read and the pages they name (mixed into the writers)
    identity   duplicates: which capture is another link's article, which page is the original
    forget     a reading list removed: its links, and the pages no other list links
    _sql       the hot paths' plain-SQL row writes
    _bulk      bulk inserts on a second thread
    queries    reads, shared by the CLI and the plugin
    versions   every capture a version (what it found is judged by `check`)
The search index's layout is `mirror._fts` (search reads it too); re-extraction is a run (`mirror.fetch.reextract`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._types import PageToFetch
    from .archive import Archive
    from .folder import ArchiveError, ArchiveLocked, now
    from .reader import ArchiveReader
    from .schema import DB_NAME, FACETS_INDEX
    from .writers import InventoryStats

__all__ = [
    "DB_NAME",
    "FACETS_INDEX",
    "Archive",
    "ArchiveError",
    "ArchiveReader",
    "ArchiveLocked",
    "InventoryStats",
    "PageToFetch",
    "now",
]

# (lazy: `mirror search` reads the schema and the queries, never the writers)
__getattr__ = lazy_exports(
    __name__,
    {
        "Archive": ".archive",
        "ArchiveReader": ".reader",
        "ArchiveError": ".folder",
        "ArchiveLocked": ".folder",
        "now": ".folder",
        "DB_NAME": ".schema",
        "FACETS_INDEX": ".schema",
        "InventoryStats": ".writers",
        "PageToFetch": "mirror._types",
    },
)
