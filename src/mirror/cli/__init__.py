"""The `mirror` command (typer): `entry` starts the process; `commands` holds the app and
registers the commands, which parse options and call the library (`links`, `fetching`, `reading`, `serve`, sharing `_common`);
`progress` is what `mirror fetch` shows while it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .commands import app
    from .entry import main

__all__ = ["app", "main"]

__getattr__ = lazy_exports(__name__, {"app": ".commands", "main": ".entry"})
