"""A reading list removed from the archive (`mirror forget`): its links, and the pages no other
list links, with everything the database holds of them; their captures stay in the WARC files.

Rows are deleted, not hidden: what a forgotten list brought leaves the reading home, link health,
`mirror check`, search and every datasette table, with no flag for each of them to honour. The
WARC files are append-only, a file holds the captures of many lists, and other tools (pywb, a
WACZ made before) read them as they are: nothing is cut out of them. A list fetched again later
is fetched anew. A page another list links stays, with its captures and versions; an original a
forgotten page was hands its duplicates on, as when it stops being an article (`identity`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import _fts
from .._enums import PageStatus
from .inventory import SET_FACETS
from .schema import SET_LINK_TAGS

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["ForgetWrites", "Forgetting"]


@dataclass
class Forgetting:
    """What forgetting a reading list takes away."""

    seed: str
    links: int = 0
    pages: list[str] = field(default_factory=list)  # linked by this list alone: their rows go
    shared: int = 0  # linked by other lists too: they stay
    archived: int = 0  # of `pages`, with a capture (which stays in the WARC files)


class ForgetWrites:
    """`mirror forget`'s writes (mixed into `RowWriters`)."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`), and `identity.DuplicateWrites._release`

        @property
        def db(self) -> sqlite_utils.Database: ...

        def _release(self, url: str, original: str | None = None) -> None: ...

    def forgetting(self, seed: str) -> Forgetting:
        """What forgetting `seed` would take away (nothing is written)."""
        plan = Forgetting(seed, links=self.db.execute("select count(*) from links where seed = ?", [seed]).fetchone()[0])
        rows = self.db.execute(
            "select distinct url, exists (select 1 from links other where other.url = links.url and other.seed != links.seed) "
            "from links where seed = ? order by url",
            [seed],
        ).fetchall()
        plan.pages = [url for url, shared in rows if not shared]
        plan.shared = sum(1 for _, shared in rows if shared)
        plan.archived = self.db.execute(
            "select count(*) from pages where url in (select value from json_each(?)) and warc_file is not null", [json.dumps(plan.pages)]
        ).fetchone()[0]
        return plan

    def forget(self, seed: str) -> Forgetting:
        """Forget `seed`, in one transaction: its links and its `seeds` row; the pages it alone
        links, out of the search index and out of `pages`, `attempts`, `versions` and `resources`
        (an original among them hands its duplicates on); the facets of the pages others link."""
        with self.db.atomic():
            plan = self.forgetting(seed)
            gone = json.dumps(plan.pages)
            alone = set(plan.pages)
            shared = [row[0] for row in self.db.execute("select distinct url from links where seed = ?", [seed]) if row[0] not in alone]
            originals = []
            for page_id, url, status in self.db.execute(
                "select id, url, status from pages where url in (select value from json_each(?))", [gone]
            ).fetchall():
                _fts.unindex_page(self.db, page_id)
                if status == PageStatus.ARCHIVED:
                    originals.append(url)
            for table, column in (("attempts", "url"), ("versions", "page_url"), ("resources", "page_url"), ("pages", "url")):
                self.db.execute(f"delete from {table} where {column} in (select value from json_each(?))", [gone])
            self.db.execute("delete from links where seed = ?", [seed])
            self.db.execute("delete from seeds where seed = ?", [seed])
            for url in originals:  # their duplicates another list links: the first is the original now
                self._release(url)
            self.db.conn.executemany(SET_FACETS + " where url = ?", [(url,) for url in shared])
            self.db.conn.executemany(SET_LINK_TAGS + " where url = ?", [(url,) for url in shared])
        return plan
