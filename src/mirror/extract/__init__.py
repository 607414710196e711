"""Captured bytes -> article: text, Markdown and metadata (trafilatura, pypdf), in worker processes.

article          extract(): the article of a page, a PDF or plain text
markdown         the article as Markdown and as plain text, from trafilatura's trees
figures          where each picture goes in the tree trafilatura reads
images           which picture an <img> shows
css              what stylesheets and pages load, read without fetching
charset, sniff   what the bytes are when the headers do not say
pool             the extraction processes
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._types import Extraction
    from .article import clean_text, count_words, extract, extract_capture, extract_plain_capture
    from .charset import decode_html
    from .pool import EXTRACT_TIMEOUT, extraction_pool, safe_extract

__all__ = [
    "EXTRACT_TIMEOUT",
    "Extraction",
    "clean_text",
    "count_words",
    "decode_html",
    "extract",
    "extract_capture",
    "extract_plain_capture",
    "extraction_pool",
    "safe_extract",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "Extraction": "mirror._types",
        "clean_text": ".article",
        "extract_plain_capture": ".article",
        "count_words": ".article",
        "decode_html": ".charset",
        "extract": ".article",
        "extract_capture": ".article",
        "EXTRACT_TIMEOUT": ".pool",
        "extraction_pool": ".pool",
        "safe_extract": ".pool",
    },
)
