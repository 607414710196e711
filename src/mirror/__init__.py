"""mirror: a link archiver and offline mirror for reading lists.

Data flows one way (see the diagram in docs/internals.md and tests/test_layering.py):
`_types` (the values passed between stages) <- `seeds`/`urls` (documents ->
links) <- `_client`/`warc` (fetch into WARC) <- `extract` (articles) <- `store`
(the archive folder and its SQLite file) <- `fetch`, `browser`, `reindex`
(the runs) <- `search` <- `plugin` (datasette) and `cli` (the commands).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._types import Link
    from .seeds import Inventory, SeedError, read_seeds
    from .store import Archive, ArchiveError
    from .urls import normalize

__all__ = ["Archive", "ArchiveError", "Inventory", "Link", "SeedError", "normalize", "read_seeds"]
__version__ = "0.1.0"

# The public names, imported on first use: `mirror search` starts without loading the
# seed parser (courlan) or the fetcher.
_HOME = {
    "Link": "._types", "Inventory": ".seeds", "SeedError": ".seeds", "read_seeds": ".seeds",
    "Archive": ".store", "ArchiveError": ".store", "normalize": ".urls",
}


def __getattr__(name: str) -> object:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
