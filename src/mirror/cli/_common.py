"""What every command shares: the consoles, error exits, untrusted text made safe, JSON out,
the seeds named on the command line, and opening the archive."""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, overload

from .._util.text import strip_controls
from ..store.folder import ArchiveError

if TYPE_CHECKING:
    from rich.console import Console

    from ..seeds.documents import Inventory
    from ..store import Archive
    from ..store.reader import ArchiveReader


class _Console:
    """A rich Console made on first use: `mirror search --json` never loads rich."""

    def __init__(self, **options: Any):
        self._options = options
        self._console: Console | None = None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:  # (the Console's, whatever it is)
        return getattr(self.get(), name)


# no emoji codes either: ":x:" in a hostile title or a cookies file's line stays text
out = _Console(highlight=False, emoji=False)
err = _Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

ARCHIVE_ENV = "MIRROR_ARCHIVE"  # the archive folder when no --archive is given (`_options.ArchiveDir`)


class TerminalStyle:
    """Text in SGR styles where `stream` is a terminal that shows them, decided as rich decides
    it: a TTY, or TTY_COMPATIBLE=1 or FORCE_COLOR (TTY_COMPATIBLE=0: never), TERM neither dumb
    nor unknown, no colours under NO_COLOR (bold and dim stay). For output written without rich;
    the text must hold no control characters (`strip_controls`)."""

    _SGR = {"bold": "1", "dim": "2", "red": "31", "yellow": "33", "cyan": "36"}
    _COLOURS = {"red", "yellow", "cyan"}

    def __init__(self, stream) -> None:
        import os

        environ = os.environ
        compatible = environ.get("TTY_COMPATIBLE", "")
        if compatible in ("0", "1"):
            terminal = compatible == "1"
        else:
            terminal = bool(environ.get("FORCE_COLOR")) or bool(getattr(stream, "isatty", lambda: False)())
        self.styled = terminal and environ.get("TERM", "").lower() not in ("dumb", "unknown")
        self.coloured = self.styled and not environ.get("NO_COLOR")

    def codes(self, *names: str) -> str:
        """The escape that starts those styles (none: the one that ends them all)."""
        if not self.styled:
            return ""
        shown = [self._SGR[name] for name in names if self.coloured or name not in self._COLOURS]
        return f"\x1b[{';'.join(shown)}m" if shown or not names else ""

    def __call__(self, text: str, *names: str) -> str:
        start = self.codes(*names)
        return f"{start}{text}{self.codes()}" if start and text else text


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {safe(message)}")
    raise SystemExit(code)


def safe(value: object) -> str:
    """Untrusted text for rich: no control characters (terminal escapes) and no markup."""
    from rich.markup import escape

    return escape(strip_controls(str(value)))


def print_json(data: object) -> None:
    """JSON on stdout; C1 controls and DEL escaped too (json.dumps leaves them raw)."""
    import json

    text = json.dumps(data, ensure_ascii=False, indent=2)
    write_out(re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m[0]):04x}", text) + "\n")


def write_out(text: str) -> None:
    """`text` on stdout (see `stdout_errors`)."""
    if sys.stdout is None:  # (started with its output closed)
        return
    with stdout_errors():
        sys.stdout.write(text)
        sys.stdout.flush()


@contextmanager
def stdout_errors() -> Iterator[None]:
    """Around writing on stdout: a reader that stopped reading (`| head`) had what it wanted; an
    output that cannot be written (a full disk) is an error (exit 120, as Python's own). Either
    way what is left unwritten goes nowhere, not to a second error at exit (Python's advice)."""
    try:
        yield
    except BrokenPipeError:
        _discard_stdout()
        raise SystemExit(0) from None
    except UnicodeEncodeError:
        fail(f"the output's encoding ({sys.stdout.encoding}) cannot show this text: set PYTHONIOENCODING=utf-8")
    except OSError as exc:
        _discard_stdout()
        err.print(f"[bold red]error:[/] the output could not be written: {safe(exc)}")
        raise SystemExit(120) from None


def _discard_stdout() -> None:
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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


@overload
def reading_list(db: Any, given: str) -> str: ...
@overload
def reading_list(db: Any, given: None) -> None: ...
@overload
def reading_list(db: Any, given: str | None) -> str | None: ...
def reading_list(db: Any, given: str | None) -> str | None:
    """The reading list `--seed` (or `mirror forget`) names, as the archive stores it: the name
    `mirror links` shows, the path typed to `mirror fetch`, or the file's name alone when one list
    has it (`seeds.names.resolve_seed`). A name no list answers to ends the command (exit 2)."""
    if given is None:
        return None
    from .._enums import COMMAND_LINE
    from ..seeds.names import SeedNameError, resolve_seed

    known = [row[0] for row in db.execute("select seed from seeds")]
    if db.execute("select 1 from links where seed = ? limit 1", [COMMAND_LINE]).fetchone():
        known.append(COMMAND_LINE)  # (URLs given on the command line: a list of their own)
    try:
        return resolve_seed(given, known)
    except SeedNameError as exc:
        fail(str(exc), code=2)


STORAGE_ERRORS = (OSError, sqlite3.Error)


@overload
def open_archive(
    folder: Path, *, create: bool = False, readonly: Literal[False] = False, lock: bool = False, cleanup: Callable[[], None] = ...
) -> AbstractContextManager[Archive]: ...


@overload
def open_archive(
    folder: Path, *, create: bool = False, readonly: Literal[True], lock: Literal[False] = False, cleanup: Callable[[], None] = ...
) -> AbstractContextManager[ArchiveReader]: ...


@contextmanager
def open_archive(
    folder: Path, *, create: bool = False, readonly: bool = False, lock: bool = False, cleanup: Callable[[], None] = lambda: None
) -> Iterator[Any]:  # (the overloads above say which)
    """The archive for one command (`readonly`: its database only, for search, show and serve;
    `lock`: the right to fetch into it). Whatever goes wrong with the folder or the database, on
    opening or while the command works in it, ends in a clear error (exit 1), never a traceback;
    `cleanup` runs first (a progress display to stop, say)."""
    try:
        if readonly:  # the database only (the writers bring the seed parser)
            from ..store.reader import ArchiveReader

            with ArchiveReader(folder, create=create, readonly=True) as reader:
                yield reader
        else:
            from ..store.archive import Archive

            with Archive(folder, create=create) as archive, archive.lock() if lock else nullcontext():
                yield archive
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
