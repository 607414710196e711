"""The archive taken anywhere: exports that other tools read without mirror.

markdown  one Markdown file per article (YAML front matter, images beside it), an index per
          reading list: a folder that opens as an Obsidian vault
epub      a reading list as a book: a chapter per article, sections as parts, images embedded
wacz      the pages' captures as a WACZ, which ReplayWeb.page and pywb replay and search
bookmarks the reading lists as a Netscape bookmark file, for browsers and bookmark services
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .bookmarks import BookmarksError, BookmarksSummary, export_bookmarks
    from .epub import EpubError, export_epub
    from .markdown import ExportSummary, export_markdown
    from .wacz import WaczError, WaczSummary, export_wacz

__all__ = [
    "BookmarksError",
    "BookmarksSummary",
    "export_bookmarks",
    "EpubError",
    "ExportSummary",
    "WaczError",
    "WaczSummary",
    "export_epub",
    "export_markdown",
    "export_wacz",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "BookmarksError": ".bookmarks",
        "BookmarksSummary": ".bookmarks",
        "export_bookmarks": ".bookmarks",
        "ExportSummary": ".markdown",
        "export_markdown": ".markdown",
        "EpubError": ".epub",
        "export_epub": ".epub",
        "WaczError": ".wacz",
        "WaczSummary": ".wacz",
        "export_wacz": ".wacz",
    },
)
