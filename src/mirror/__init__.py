"""mirror: a link archiver and offline mirror for reading lists.

Data flows one way (see the README's diagram and tests/test_layering.py):
`_types` (the values passed between stages) <- `seeds`/`urls` (documents ->
links) <- `_client`/`warc` (fetch into WARC) <- `extract` (articles) <- `store`
(the archive folder and its SQLite file) <- `fetch`, `browser`, `reindex`
(the runs) <- `search` <- `plugin` (datasette) and `cli` (the commands).
"""

from ._types import Link
from .seeds import Inventory, SeedError, read_seeds
from .store import Archive, ArchiveError
from .urls import normalize

__all__ = ["Archive", "ArchiveError", "Inventory", "Link", "SeedError", "normalize", "read_seeds"]
__version__ = "0.1.0"
