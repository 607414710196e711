"""The archive database: one ordinary SQLite file, `DIR/mirror.db`.

Tables are plain sqlite-utils tables so that datasette, sqlite-utils and the
sqlite3 shell all read them. WAL mode lets readers work while a fetch writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

from . import urls
from .seeds import Inventory, Link

__all__ = ["DB_NAME", "Archive", "ArchiveError", "InventoryStats", "default_archive_dir", "now"]

DB_NAME = "mirror.db"

# One row per occurrence of a link in a seed.
LINKS_COLUMNS = {
    "seed": str,
    "line": int,
    "col": int,
    "url": str,
    "url_as_written": str,
    "title": str,
    "section": str,
}
# One row per page (normalized URL). Later stages add their own columns.
PAGES_COLUMNS = {
    "url": str,
    "status": str,  # pending, archived, no_text, failed, skipped
    "error": str,  # short reason category
    "error_message": str,  # what a person reads
    "candidates": str,  # JSON list of glued-URL repairs
    "first_seen": str,
}
SEEDS_COLUMNS = {"seed": str, "links": int, "read_at": str}


class ArchiveError(Exception):
    """The archive folder or database cannot be used."""


@dataclass(frozen=True)
class InventoryStats:
    links: int
    pages: int
    new_pages: int
    skipped: int
    removed_links: int


def default_archive_dir() -> Path:
    return Path(os.environ.get("MIRROR_ARCHIVE") or "archive")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Archive:
    """An archive folder: the database now, WARC files beside it later."""

    def __init__(self, path: Path | str, *, create: bool = True):
        self.path = Path(path)
        self.db_path = self.path / DB_NAME
        if not self.path.exists():
            if not create:
                raise ArchiveError(f"{self.path}: no archive here (run `mirror links` or `mirror fetch` first)")
            try:
                self.path.mkdir(parents=True)
            except OSError as exc:
                raise ArchiveError(f"{self.path}: cannot create archive folder ({exc.strerror})") from exc
        elif not self.path.is_dir():
            raise ArchiveError(f"{self.path}: not a folder")
        try:
            conn = sqlite3.connect(self.db_path, timeout=30)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA busy_timeout = 30000")
            if self.db.journal_mode != "wal":
                self.db.enable_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"{self.db_path}: cannot open database ({exc})") from exc

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self) -> None:
        with self.db.atomic():
            _ensure_table(self.db["links"], LINKS_COLUMNS, pk=("seed", "line", "col"))
            _ensure_table(self.db["pages"], PAGES_COLUMNS, pk="url")
            _ensure_table(self.db["seeds"], SEEDS_COLUMNS, pk="seed")
            self.db["links"].create_index(["url"], if_not_exists=True)
            self.db["pages"].create_index(["status"], if_not_exists=True)

    def record_inventory(self, inventory: Inventory) -> InventoryStats:
        """Store the links of the seeds just read, in one transaction.

        Idempotent: re-recording the same seeds changes nothing. A link that
        left its seed loses its occurrence row; its page stays.
        """
        stamp = now()
        pages = inventory.pages
        with self.db.atomic():
            removed = 0
            for seed in inventory.seeds:
                keep = {(l.line, l.col) for l in inventory.links if l.seed == seed}
                stale = [
                    (row["line"], row["col"])
                    for row in self.db.query("select line, col from links where seed = ?", [seed])
                    if (row["line"], row["col"]) not in keep
                ]
                for line, col in stale:
                    self.db.execute("delete from links where seed = ? and line = ? and col = ?", [seed, line, col])
                removed += len(stale)
                count = sum(1 for l in inventory.links if l.seed == seed)
                self.db["seeds"].upsert({"seed": seed, "links": count, "read_at": stamp}, pk="seed")
            self.db["links"].upsert_all((_link_row(l) for l in inventory.links), pk=("seed", "line", "col"))
            known = {row["url"] for row in self.db.query("select url from pages")}
            new_rows = [_page_row(url, links, stamp) for url, links in pages.items() if url not in known]
            self.db["pages"].insert_all(new_rows, pk="url", ignore=True)
            for url, links in pages.items():
                candidates = _candidates(links)
                if url in known and candidates:
                    self.db["pages"].update(url, {"candidates": json.dumps(candidates)})
        return InventoryStats(
            links=len(inventory.links),
            pages=len(pages),
            new_pages=len(new_rows),
            skipped=sum(1 for links in pages.values() if links[0].skip_reason),
            removed_links=removed,
        )

    def page_statuses(self, urls_: list[str] | None = None) -> dict[str, str]:
        rows = self.db.query("select url, status from pages")
        statuses = {row["url"]: row["status"] for row in rows}
        return statuses if urls_ is None else {u: statuses[u] for u in urls_ if u in statuses}


def _ensure_table(table: sqlite_utils.db.Table, columns: dict[str, type], pk: str | tuple[str, ...]) -> None:
    if not table.exists():
        table.create(columns, pk=pk, not_null={pk} if isinstance(pk, str) else set(pk))
        return
    existing = {c.name for c in table.columns}
    for name, kind in columns.items():
        if name not in existing:
            table.add_column(name, kind)


def _link_row(link: Link) -> dict[str, object]:
    return {
        "seed": link.seed,
        "line": link.line,
        "col": link.col,
        "url": link.url,
        "url_as_written": link.url_as_written,
        "title": link.title,
        "section": link.section,
    }


def _page_row(url: str, links: list[Link], stamp: str) -> dict[str, object]:
    problem = urls.classify(links[0].url_as_written if links[0].skip_reason else url)
    candidates = _candidates(links)
    return {
        "url": url,
        "status": "skipped" if problem else "pending",
        "error": problem[0] if problem else None,
        "error_message": problem[1] if problem else None,
        "candidates": json.dumps(candidates) if candidates else None,
        "first_seen": stamp,
    }


def _candidates(links: list[Link]) -> list[str]:
    seen: list[str] = []
    for link in links:
        seen.extend(c for c in link.candidates if c not in seen)
    return seen
