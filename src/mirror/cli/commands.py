"""The `mirror` command: the typer app, its entry point, and its commands in the order
`mirror --help` lists them. Each command lives with its helpers: `links`, `fetching` (fetch,
reindex), `checking` (check), `reading` (search, show), `serve`; what they share is `_common`. Whatever a command
alone needs (the fetcher, trafilatura, datasette, playwright) it imports when it runs, so that
`mirror search` and `mirror --help` start fast; and `mirror <command>` builds an app of that
command alone (typer reads every command's options when it builds one: 50 ms for all of them)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from ._common import err, safe

# name -> (module, function or sub-app), in the order `mirror --help` lists them
COMMANDS = {
    "links": (".links", "links"),
    "fetch": (".fetching", "fetch"),
    "check": (".checking", "check"),
    "reindex": (".fetching", "reindex"),
    "search": (".reading", "search_command"),
    "show": (".reading", "show"),
    "serve": (".serve", "serve"),
    "export": (".exporting", "export_app"),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The `mirror` app: every command, or only the one named (what `mirror <command>` runs)."""
    built = typer.Typer(
        no_args_is_help=True,
        add_completion=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        help="Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.",
    )
    built.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if only is None or name == only:
            command = getattr(importlib.import_module(module, __package__), attribute)
            if isinstance(command, typer.Typer):
                built.add_typer(command, name=name)
            else:
                built.command(name)(command)
    return built


@functools.cache
def _whole_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> object:
    if name == "app":  # the whole app, made once (tests run it with typer's runner)
        return _whole_app()
    raise AttributeError(name)


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
    takes 20 ms, a tenth of a `mirror search`. What it wrote is flushed first; output that
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


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"mirror {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.

    Start with: mirror fetch mylist.md, then mirror serve --open, or mirror search "words".
    """
