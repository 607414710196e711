"""The `mirror` command: the typer app, its entry point, and its commands in the order
`mirror --help` lists them. Each command lives with its helpers: `links`, `fetching` (fetch,
reindex), `checking` (check), `reading` (search, show), `serve`; what they share is `_common`. Whatever a command
alone needs (the fetcher, trafilatura, datasette, playwright) it imports when it runs, so that
`mirror search` and `mirror --help` start fast."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ._common import err, safe
from .checking import check
from .exporting import export_app
from .fetching import fetch, reindex
from .links import links
from .reading import search_command, show
from .serve import serve

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.",
)

app.command()(links)
app.command()(fetch)
app.command()(check)
app.command()(reindex)
app.command("search")(search_command)
app.command()(show)
app.command()(serve)
app.add_typer(export_app, name="export")


def main() -> None:
    for number, arg in enumerate(sys.argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 reach us as lone surrogates
            err.print(f"[bold red]error:[/] argument {number} is not valid UTF-8: {safe(arg.encode('utf-8', 'backslashreplace').decode())}")
            raise SystemExit(2) from None
    app()


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"mirror {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.

    Start with: mirror fetch mylist.md, then mirror serve --open, or mirror search "words".
    """
