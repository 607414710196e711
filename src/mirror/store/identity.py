"""Duplicates: when a capture is the same article as one archived under another link, which
page is the original, and what its duplicates become when it stops being one.

The same final URL makes two links one article; a canonical URL and a title are claims a page
makes, believed only from the canonical URL's own site (`_same_site`) and with the same text
(`mirror._util.similar.same_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _fts
from .._types import Extraction, PageStatus
from .._util.similar import same_text
from ._sql import _update_page
from .schema import reindex_rows

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["DuplicateWrites"]


class DuplicateWrites:
    """The duplicate bookkeeping of `RowWriters` (mixed into it): a capture's status and
    original, and the pages handed on when an original changes."""

    if TYPE_CHECKING:  # the archive's (`ArchiveReader.db`)

        @property
        def db(self) -> sqlite_utils.Database: ...

    adopted: list[str]
    released: list[str]

    def _duplicate(self, url: str) -> bool:
        """Whether a re-extracted page stays the duplicate it was (its original still archived)."""
        row = self.db.execute(
            "select 1 from pages p join pages o on o.url = p.same_as where p.url = ? and o.status = ?", [url, PageStatus.ARCHIVED]
        ).fetchone()
        return row is not None

    def _original(self, url: str, final_url: str, extraction: Extraction | None) -> str | None:
        """The archived page (another link's) that this capture is the same article as: for a
        page that redirected, the one at the address it ended at; else the one the canonical
        URL it declares names (a claim: believed from the same site, with the same title and text). A page at
        its own address is nobody's duplicate by its final URL (`_adopt` makes it the original)."""
        from ..urls import normalize

        if normalize(final_url) != url:
            row = self.db.execute(
                "select url from pages where url != :url and status = :archived and (url = :final_normalized or final_url = :final) "
                "order by url = :final_normalized desc, id limit 1",
                {"url": url, "archived": PageStatus.ARCHIVED, "final": final_url, "final_normalized": normalize(final_url)},
            ).fetchone()
            if row is not None:
                same: str = row[0]
                return same
        if extraction is None or not extraction.canonical or not extraction.title or not _same_site(final_url, extraction.canonical):
            return None
        canonical = extraction.canonical
        for other, other_final, text in self.db.execute(
            "select url, final_url, text from pages where url != :url and status = :archived and title = :title "
            "and (url = :canonical or final_url = :canonical or canonical = :canonical) order by url = :canonical desc, id limit 20",
            {"url": url, "archived": PageStatus.ARCHIVED, "canonical": canonical, "title": extraction.title},
        ):
            if _same_site(other_final or other, canonical) and same_text(text, extraction.text):
                return str(other)
        return None

    def _identify(self, url: str, final_url: str, status: PageStatus, extraction: Extraction | None) -> tuple[PageStatus, str | None]:
        """A capture's status and its original: an article archived before under another link
        makes this one its DUPLICATE."""
        original = self._original(url, final_url, extraction) if status == PageStatus.ARCHIVED else None
        return (PageStatus.DUPLICATE if original is not None else status), original

    def _settle(
        self, url: str, final_url: str, was: str | None, status: PageStatus | None, original: str | None, extraction: Extraction | None
    ) -> None:
        """After a page's new status: an article is the original of those it is the address of;
        a page that stopped being one hands its duplicates on."""
        if status == PageStatus.ARCHIVED:
            self._adopt(url, final_url, extraction)
        elif was == PageStatus.ARCHIVED and status is not None:
            self._release(url, original)

    def _adopt(self, url: str, final_url: str, extraction: Extraction | None) -> None:
        """A page that is the article's own address (no redirect) is the original, whichever
        link was recorded first: the pages archived before that end at it, or that declare it
        canonical with its title and text (`_same_site`, `same_text`), become its duplicates."""
        from ..urls import normalize

        if normalize(final_url) != url:
            return
        others = [
            row[0]
            for row in self.db.execute(
                "select url from pages where url != :url and status = :archived and final_url = :final",
                {"url": url, "final": final_url, "archived": PageStatus.ARCHIVED},
            )
        ]
        if extraction is not None and extraction.title:
            others += [
                other
                for other, other_final, text in self.db.execute(
                    "select url, final_url, text from pages where url != :url and status = :archived and canonical = :url and title = :title "
                    "order by id limit 20",
                    {"url": url, "archived": PageStatus.ARCHIVED, "title": extraction.title},
                )
                if other not in others and _same_site(other_final or other, url) and same_text(text, extraction.text)
            ]
        for other in others:
            _update_page(self.db, other, {"status": PageStatus.DUPLICATE, "same_as": url})
            _fts.unindex_page(self.db, self.db.execute("select id from pages where url = ?", [other]).fetchone()[0])
        if others:  # the duplicates of those are this page's now
            self.db.conn.executemany("update pages set same_as = ? where same_as = ?", [(url, other) for other in others])
        self.adopted += others

    def _status(self, url: str) -> str | None:
        row = self.db.execute("select status from pages where url = ?", [url]).fetchone()
        return row[0] if row else None

    def _release(self, url: str, original: str | None = None) -> None:
        """`url` is no longer an archived article (re-fetched as no text, re-extracted): its
        duplicates are not hidden behind it. The first becomes the original, indexed again, and
        the others its duplicates. (`url` is now a duplicate of `original`: they are that one's.)"""
        heirs = [row[0] for row in self.db.execute("select url from pages where same_as = ? and status = ? order by id", [url, PageStatus.DUPLICATE])]
        if not heirs:
            return
        if original is not None:
            self.db.execute("update pages set same_as = ? where same_as = ?", [original, url])
            return
        heir, rest = heirs[0], heirs[1:]
        _update_page(self.db, heir, {"status": PageStatus.ARCHIVED, "same_as": None})
        reindex_rows(self.db, urls=[heir])
        self.released.append(heir)
        self.db.conn.executemany("update pages set same_as = ? where url = ?", [(heir, other) for other in rest])


def _same_site(url: str, canonical: str) -> bool:
    """Whether a page may speak for `canonical`: only a page of the canonical URL's own site
    (a page elsewhere declaring another site's URL is not believed)."""
    from ..urls import site_of  # (here: courlan is 150 ms that `mirror search` does not need)

    return site_of(url) == site_of(canonical)
