"""Reading lists -> links: seed documents (Markdown, text, HTML pages, bookmark exports) read into
an inventory of links with their provenance, and URL identity (what makes two spellings of a link
the same page).

    documents    files and folders -> an Inventory; the text of a seed and its encoding
    text         plain-text and Markdown seeds: each line's kind, then titles and sections
    links        the links in one line: found, trimmed, titled and made a Link
    html         HTML seeds: saved pages and the Netscape bookmark export
    imports      the exports of bookmark services (JSON, CSV) and feeds (RSS, Atom, OPML)
URL identity (normalize, classify, glued-URL repairs) is `mirror.urls`, every stage's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._types import Link
    from ..urls import normalize
    from .documents import Inventory, SeedError, decode_seed, links_from_urls, read_seeds
    from .text import parse_text

__all__ = ["Inventory", "Link", "SeedError", "decode_seed", "links_from_urls", "normalize", "parse_text", "read_seeds"]

__getattr__ = lazy_exports(
    __name__,
    {
        "Inventory": ".documents",
        "Link": "mirror._types",
        "SeedError": ".documents",
        "decode_seed": ".documents",
        "links_from_urls": ".documents",
        "parse_text": ".text",
        "read_seeds": ".documents",
        "normalize": "mirror.urls",
    },
)
