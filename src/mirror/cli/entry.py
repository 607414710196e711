"""The `mirror` process: where it starts (`main`) and how SIGTERM stops it. typer parses every
command line (`commands`)."""

from __future__ import annotations

import os
import signal
import sys

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
        from .commands import COMMANDS, build_app

        build_app(command if command in COMMANDS else None)()
    except SystemExit as exc:
        if exc.code == 130 and command != "fetch":  # (fetch says what it kept)
            err.print("[yellow]interrupted:[/] stopped; nothing half-written was left")
        raise
    finally:
        if _terminated:  # cleaned up: now end as a SIGTERM ends a process (what service managers expect)
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGTERM)


_terminated = False


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
