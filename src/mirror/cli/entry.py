"""The `mirror` process: where it starts (`main`), how SIGTERM stops it, and how a command
that only read ends. `mirror search` with the options a person types runs without typer
(`searching.read_options`); every other command line goes to the typer app (`commands`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

from ._common import err, safe


def main() -> None:
    for number, arg in enumerate(sys.argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 reach us as lone surrogates
            err.print(f"[bold red]error:[/] argument {number} is not valid UTF-8: {safe(arg.encode('utf-8', 'backslashreplace').decode())}")
            raise SystemExit(2) from None
    signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    command = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        if command == "search" and (options := _search_options()) is not None:
            _search(options)
        from .commands import COMMANDS, build_app

        build_app(command if command in COMMANDS else None)()
    except SystemExit as exc:
        if exc.code == 130 and command != "fetch":  # (fetch says what it kept)
            err.print("[yellow]interrupted:[/] stopped; nothing half-written was left")
        if command in _READERS and _is_the_process() and not _terminated and (exc.code is None or isinstance(exc.code, int)):
            _end_now(exc.code or 0)
        raise
    finally:
        if _terminated:  # cleaned up: now end as a SIGTERM ends a process (what service managers expect)
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGTERM)


_terminated = False
_READERS = {"search", "show"}  # they write nothing, start no thread, and have closed the archive


def _is_the_process() -> bool:
    """Whether this is the `mirror` command's own process (`mirror`, `python -m mirror`), not a
    program that called `main()`: only that one may end without its teardown."""
    return Path(sys.argv[0]).name in ("mirror", "mirror.exe", "__main__.py") and getattr(sys.modules.get("__main__"), "__package__", None) in ("", None, "mirror")


def _end_now(code: int) -> NoReturn:
    """End a command that only read, without Python's teardown: freeing every module it loaded
    takes 20 ms, a fifth of a `mirror search`. What it wrote is flushed first; output that
    cannot be written (a full disk) is an error, as Python's own teardown makes it (exit 120)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # a reader that stopped reading (`| head`): what it wanted, it had
            pass
        except (OSError, ValueError) as exc:
            if stream is sys.stdout:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    sys.stderr.write(f"error: the output could not be written: {exc}\n")
                    sys.stderr.flush()
                code = code or 120
    os._exit(code)


def _stop_as_on_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (`kill`, a service manager, a container stopping) stops a command as Ctrl-C does:
    `mirror fetch` keeps what is done, an export removes its unfinished files; then the process
    ends by SIGTERM, as before. A second SIGTERM ends it at once. (Where SIGINT is ignored, as in
    a script's background job, the interrupt is raised here.)"""
    global _terminated
    _terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)


def _search_options() -> dict[str, object] | None:
    from .searching import read_options

    return read_options(sys.argv[2:], os.environ)


def _search(options: dict[str, object]) -> NoReturn:
    """`mirror search` run as typer runs it: an interrupted search ends with 130, as typer ends one."""
    from .searching import search

    try:
        search(**options)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(0)
