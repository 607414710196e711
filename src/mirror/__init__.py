"""mirror: a link archiver and offline mirror for reading lists.

One package per stage, and data flows one way (see the diagram in docs/internals.md and
tests/test_layering.py): `_types` (the values passed between stages) and `_util` <- `seeds`
(documents -> links; URL identity) <- `warc` and `http` (fetch into WARC) <- `extract` (articles)
<- `store` (the archive folder and its SQLite file) <- `browser` <- `fetch` (the run) <- `search`
<- `plugin` (datasette) and `cli` (the commands).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.exports import lazy_exports

if TYPE_CHECKING:
    from ._types import Link
    from .seeds import Inventory, SeedError, normalize, read_seeds
    from .store import Archive, ArchiveError

__all__ = ["Archive", "ArchiveError", "Inventory", "Link", "SeedError", "normalize", "read_seeds"]
__version__ = "0.1.0"

# The public names, imported on first use: `mirror search` starts without loading the
# seed parser (courlan) or the fetcher.
__getattr__ = lazy_exports(
    __name__,
    {
        "Link": "._types",
        "Inventory": ".seeds",
        "SeedError": ".seeds",
        "read_seeds": ".seeds",
        "Archive": ".store",
        "ArchiveError": ".store",
        "normalize": ".seeds",
    },
)
