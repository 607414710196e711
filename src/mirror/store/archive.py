"""The archive: the folder, its database and every read and write the runs make on it, as one object."""

from __future__ import annotations

from pathlib import Path

from .folder import ArchiveFolder
from .queries import PipelineReads
from .reader import ArchiveReader
from .writers import RowWriters


class Archive(ArchiveReader, ArchiveFolder, RowWriters, PipelineReads):
    """An archive folder and its database (see `ArchiveReader` for `readonly`), with the fetch
    lock and WARC files (`ArchiveFolder`), the runs' writes (`RowWriters`) and reads (`PipelineReads`)."""

    def __init__(self, path: Path | str, *, create: bool = True, readonly: bool = False):
        self.adopted: list[str] = []  # pages that became duplicates of a page recorded after them (see RowWriters._adopt)
        self.released: list[str] = []  # duplicates that became the original when theirs stopped being an article
        super().__init__(path, create=create, readonly=readonly)

    def __enter__(self) -> Archive:
        return self
