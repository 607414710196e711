"""Text hygiene shared by every layer (no imports from the rest of mirror)."""

from __future__ import annotations

import functools
import re

__all__ = ["strip_controls"]

# C0 controls but tab and newline, DEL and C1: ESC starts terminal sequences
# (OSC 0 sets the window title, OSC 52 writes the clipboard), CR overwrites a line.
_CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f"


def strip_controls(text: str, keep: str = "") -> str:
    """`text` without control characters, so it can never drive a terminal.

    Tab and newline stay, and so do the characters in `keep`.
    """
    return _pattern(keep).sub("", text)


@functools.cache
def _pattern(keep: str) -> re.Pattern:
    if not keep:
        return re.compile(f"[{_CONTROL_CHARS}]")
    return re.compile(f"(?![{re.escape(keep)}])[{_CONTROL_CHARS}]")
