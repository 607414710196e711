"""mirror: a link archiver and offline mirror for reading lists.

The pipeline, one module per stage: `seeds` (documents -> links), `urls`
(page identity), `store` (the SQLite archive), `cli` (the command).
"""

from .seeds import Inventory, Link, SeedError, read_seeds
from .store import Archive, ArchiveError
from .urls import normalize

__all__ = ["Archive", "ArchiveError", "Inventory", "Link", "SeedError", "normalize", "read_seeds"]
__version__ = "0.1.0"
