"""The fetch run: every pending page fetched politely into WARC, extracted, recorded, then the
browser pass; crash recovery from the WARC files a killed run left, and a page's requisites.

    runner      the run (`run`): pages in, summary out; orchestrates http, extract, store, browser
    pages       one page's fetch: retries, glued-URL repairs, the Wayback Machine's copy
    resources   a page's images and stylesheets, each asked for once a run
    requisites  what a captured stylesheet loads
    recovery    responses a crashed run wrote to WARC but never recorded
    feeds       a feed given as a URL: its entries read from its capture, as a reading list
    reextract   `mirror reindex`: every capture extracted again, without the network
    options     what the run is asked to do; cookies.txt, and the cookies a run sends
    browser_cookies  --cookies-from-browser: a browser profile's cookies (Chromium's, Firefox's)
    saved       pages the user's browser saved: SingleFile, MHTML, HTML
    added       such a page added to the archive (`mirror add`, uploads)
    summary     what the run did
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._types import PageResult
    from .options import DEFAULT_USER_AGENT, FetchError, FetchOptions, load_cookies
    from .reextract import reindex
    from .runner import run
    from .summary import Summary

__all__ = ["DEFAULT_USER_AGENT", "FetchError", "FetchOptions", "PageResult", "Summary", "load_cookies", "reindex", "run"]

__getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_USER_AGENT": ".options",
        "FetchError": ".options",
        "FetchOptions": ".options",
        "load_cookies": ".options",
        "PageResult": "mirror._types",
        "Summary": ".summary",
        "run": ".runner",
        "reindex": ".reextract",
    },
)
