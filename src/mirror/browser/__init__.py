"""Browser capture: pages that need JavaScript rendered in Debian's chromium, driven by Playwright.

    rendering  the pass after the HTTP fetch: which pages, and each render stored
    renderer   one chromium rendering pages in a few tabs, under a memory bound
    memory     how much memory the browser takes (PSS, from /proc)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .._enums import BrowserMode, CaptureKind, RenderError
    from .renderer import Rendered, Renderer
    from .rendering import find_chromium, render_pass, resolve

__all__ = ["BrowserMode", "CaptureKind", "RenderError", "Rendered", "Renderer", "find_chromium", "render_pass", "resolve"]

__getattr__ = lazy_exports(__name__, {
    "BrowserMode": "mirror._types", "CaptureKind": "mirror._types", "RenderError": "mirror._types",
    "Rendered": ".renderer", "Renderer": ".renderer",
    "find_chromium": ".rendering", "render_pass": ".rendering", "resolve": ".rendering",
})
