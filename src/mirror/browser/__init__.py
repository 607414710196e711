"""Browser capture: pages that need JavaScript rendered in Debian's chromium, driven by Playwright.

    decide     which pages a browser can improve (evidence in their HTTP capture), and whether a render did
    renderer   one chromium rendering pages in a few tabs, under a memory bound; finding it
    visit      one page in a fresh context: loaded from its capture, settled, captured
    routes     every request the page makes, answered by the run (its HTTP client and gates)
    memory     how much memory the browser takes (PSS, from /proc)

The browser knows nothing of the run: the run (`mirror.fetch`) gives it each page's capture and
answers its requests, so that they go through the same gates, rules and WARC files as the fetch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._enums import BrowserMode, CaptureKind, RenderError
    from .decide import better, evidence
    from .renderer import Renderer, default_tabs, find_chromium, resolve
    from .routes import BrowserRequest, Served
    from .visit import Rendered

__all__ = [
    "BrowserMode",
    "BrowserRequest",
    "CaptureKind",
    "RenderError",
    "Rendered",
    "Renderer",
    "Served",
    "better",
    "default_tabs",
    "evidence",
    "find_chromium",
    "resolve",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "BrowserMode": "mirror._types",
        "CaptureKind": "mirror._types",
        "RenderError": "mirror._types",
        "better": ".decide",
        "evidence": ".decide",
        "Renderer": ".renderer",
        "default_tabs": ".renderer",
        "find_chromium": ".renderer",
        "resolve": ".renderer",
        "BrowserRequest": ".routes",
        "Served": ".routes",
        "Rendered": ".visit",
    },
)
