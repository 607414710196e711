"""The `mirror` command: parses options and calls the library."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from .seeds import SeedError, read_seeds
from .store import Archive, ArchiveError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette.",
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

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
    list[Path] | None,
    typer.Argument(help="Seed files or folders [default: seeds/]", show_default=False),
]


def main() -> None:
    app()


@app.callback()
def _root() -> None:
    """Archive every link in your reading lists: seeds -> WARC -> SQLite -> datasette."""


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


@app.command()
def links(
    sources: Sources = None,
    archive: ArchiveDir = Path("archive"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as a JSON array.")] = False,
) -> None:
    """Read seed documents and record every link in the archive, without fetching."""
    try:
        inventory = read_seeds(sources or [Path("seeds")])
    except SeedError as exc:
        fail(str(exc), code=2)
    for warning in inventory.warnings:
        err.print(f"[yellow]warning:[/] {warning}")
    try:
        with Archive(archive) as store:
            stats = store.record_inventory(inventory)
    except ArchiveError as exc:
        fail(str(exc))

    if as_json:
        rows = []
        for link in inventory.links:
            row = asdict(link)
            row["candidates"] = list(link.candidates)
            row["status"] = "skipped" if link.skip_reason else "pending"
            rows.append(row)
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        out.print(_links_table(inventory.links))
    err.print(
        f"{stats.links} links in {len(inventory.seeds)} seeds -> {stats.pages} pages "
        f"({stats.new_pages} new, {stats.skipped} skipped) recorded in {archive / 'mirror.db'}"
    )


def _links_table(links: list) -> Table:
    table = Table("seed:line", "section", "title", show_lines=False)
    table.add_column("url", overflow="fold")
    table.add_column("note")
    for link in links:
        seed = link.seed.rsplit("/", 1)[-1]
        note = link.skip_reason or (f"{len(link.candidates)} repairs if 404" if link.candidates else "")
        table.add_row(f"{seed}:{link.line}", link.section or "", link.title or "", link.url, note)
    return table
