"""The `mirror` command's typer app, and its commands in the order `mirror --help` lists them
(the process starts in `entry.main`). Each command lives with its helpers: `links`, `fetching` (fetch,
reindex), `adding` (add), `checking` (check), `reading` (search, show), `serve`, `exporting`,
`forgetting` (forget); what they share is `_common`. Whatever a command alone needs (the
fetcher, trafilatura, datasette, playwright) it imports when it runs, so that
`mirror search` and `mirror --help` start fast; and `mirror <command>` builds an app of that
command alone (typer reads every command's options when it builds one: 50 ms for all of them)."""

from __future__ import annotations

import functools
import importlib
from typing import Annotated

import typer

# name -> (module, function or sub-app), in the order `mirror --help` lists them
COMMANDS = {
    "links": (".links", "links"),
    "fetch": (".fetching", "fetch"),
    "add": (".adding", "add"),
    "check": (".checking", "check"),
    "reindex": (".fetching", "reindex"),
    "search": (".reading", "search_command"),
    "show": (".reading", "show"),
    "serve": (".serve", "serve"),
    "export": (".exporting", "export_app"),
    "forget": (".forgetting", "forget"),
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
