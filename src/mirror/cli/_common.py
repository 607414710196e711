"""What every command shares: the consoles, error exits, untrusted text made safe, JSON out,
the seeds named on the command line, and opening the archive."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from .._util.text import strip_controls
from ..store.folder import ArchiveError

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import Archive

    from ..seeds.documents import Inventory


class _Console:
    """A rich Console made on first use: `mirror search --json` never loads rich."""

    def __init__(self, **options: object):
        self._options, self._console = options, None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> object:
        return getattr(self.get(), name)


# no emoji codes either: ":x:" in a hostile title or a cookies file's line stays text
out = _Console(highlight=False, emoji=False)
err = _Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

ArchiveDir = Annotated[
    Path,
    typer.Option(
        "--archive",
        envvar="MIRROR_ARCHIVE",
        help="Archive folder; the database is DIR/mirror.db.",
        file_okay=False,
    ),
]
Sources = Annotated[
    list[str] | None,
    typer.Argument(help="Seed files, folders or URLs.", show_default="seeds/"),
]


class TerminalStyle:
    """Text in SGR styles where `stream` is a colour terminal, as rich decides it (a TTY, no
    NO_COLOR, TERM not dumb; FORCE_COLOR forces), as it is elsewhere: for output written without
    rich. The text must hold no control characters (`strip_controls`)."""

    _SGR = {"bold": "1", "dim": "2", "red": "31", "yellow": "33", "cyan": "36"}

    def __init__(self, stream) -> None:
        import os

        tty = getattr(stream, "isatty", lambda: False)()
        self.color = bool(os.environ.get("FORCE_COLOR")) or (tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb")

    def codes(self, *names: str) -> str:
        """The escape that starts those styles (none: that ends them)."""
        return f"\x1b[{';'.join(self._SGR[name] for name in names) or '0'}m" if self.color else ""

    def __call__(self, text: str, *names: str) -> str:
        return f"{self.codes(*names)}{text}{self.codes()}" if self.color and text else text


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {safe(message)}")
    raise typer.Exit(code)


def safe(value: object) -> str:
    """Untrusted text for rich: no control characters (terminal escapes) and no markup."""
    from rich.markup import escape

    return escape(strip_controls(str(value)))


def print_json(data: object) -> None:
    """JSON on stdout; C1 controls and DEL escaped too (json.dumps leaves them raw)."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    print(re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m[0]):04x}", text))


def read_inventory(sources: list[str] | None) -> Inventory:
    """Seed files/folders and URLs named on the command line (default: seeds/)."""
    from ..seeds.documents import Inventory, SeedError, links_from_urls, read_seeds

    sources = sources or ["seeds"]
    urls_ = [s for s in sources if s.lower().startswith(("http://", "https://"))]
    paths = [Path(s) for s in sources if s not in urls_]
    try:
        inventory = read_seeds(paths) if paths else Inventory()
    except SeedError as exc:
        fail(str(exc), code=2)
    extra = links_from_urls(urls_)
    inventory.links.extend(extra.links)
    inventory.seeds.extend(extra.seeds)
    for warning in inventory.warnings:
        err.print(f"[yellow]warning:[/] {safe(warning)}")
    return inventory


STORAGE_ERRORS = (OSError, sqlite3.Error)


@contextmanager
def open_archive(
    folder: Path, *, create: bool = False, readonly: bool = False, lock: bool = False, cleanup: Callable[[], None] = lambda: None
) -> Iterator[Archive]:
    """The archive for one command. Whatever goes wrong with the folder or the database, on
    opening or while the command works in it, ends in a clear error (exit 1), never a traceback;
    `cleanup` runs first (a progress display to stop, say)."""
    try:
        if readonly:  # search, show, serve: the database only (the writers bring the seed parser)
            from ..store.reader import ArchiveReader as opened
        else:
            from ..store.archive import Archive as opened
        with opened(folder, create=create, readonly=readonly) as store, (store.lock() if lock else nullcontext()):
            yield store
    except ArchiveError as exc:
        cleanup()
        fail(str(exc))
    except STORAGE_ERRORS as exc:
        cleanup()
        storage_failure(folder, exc)


def storage_failure(archive: Path, exc: Exception) -> NoReturn:
    """A full disk or a read-only folder: say so plainly, never a traceback."""
    reason = getattr(exc, "strerror", None) or str(exc)
    fail(
        f"cannot use the archive {archive}: {reason}. Everything saved before this is kept: "
        "free some space or fix the folder's permissions, then run the same command again"
    )
