"""`mirror links`: the reading lists' links recorded in the archive, and shown as a table,
a summary per seed, tab-separated lines or JSON."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._enums import PageStatus
from .._util.text import count, strip_controls
from ..store import DB_NAME
from ._common import err, open_archive, out, print_json, read_inventory, safe
from ._options import ArchiveDir, Sources

if TYPE_CHECKING:
    from rich.table import Table

    from ..seeds.documents import Inventory

TABLE_ROWS = 300  # more links than this: a summary per seed (drawing a huge table takes minutes)


def links(
    sources: Sources = None,
    archive: ArchiveDir = Path("archive"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as a JSON array.")] = False,
) -> None:
    """Read seed documents and record every link in the archive, without fetching."""
    inventory = read_inventory(sources)
    with open_archive(archive, create=True) as store:
        stats = store.record_inventory(inventory)

    if as_json:
        rows = []
        for link in inventory.links:
            row = asdict(link)
            row["candidates"] = list(link.candidates)
            row["status"] = PageStatus.SKIPPED if link.skip_reason else PageStatus.PENDING
            rows.append(row)
        print_json(rows)
    elif not inventory.links:
        pass  # (the seed's warning said it: no empty table)
    elif not out.is_terminal:  # piped or to a file: whole URLs, one link a line, for cut and grep
        print("seed:line\tsection\ttitle\turl\tnote")
        for link in inventory.links:
            print("\t".join(" ".join(strip_controls(cell).split()) for cell in _link_cells(link)))
    elif len(inventory.links) > TABLE_ROWS:
        out.print(_links_summary(inventory))
    else:
        out.print(_links_table(inventory.links, out.width))
    err.print(
        f"{count(stats.links, 'link')} in {count(len(inventory.seeds), 'seed')} -> {count(stats.pages, 'page')} "
        f"({stats.new_pages} new, {stats.skipped} skipped) recorded in {safe(archive / DB_NAME)}"
    )


def _links_table(links: list, width: int) -> Table:
    """One row a link; a URL is never wrapped (it is copied from here): one wider than the
    terminal allows loses its middle, and the other columns wrap around it."""
    from rich.table import Table

    room = max(30, width - 40)  # what the other four columns keep at least
    longest = max((len(link.url) for link in links), default=3)
    table = Table("seed:line", "section", "title", show_lines=False)
    table.add_column("url", no_wrap=True, min_width=min(longest, room))
    table.add_column("note")
    for link in links:
        seed_line, section, title, url, note = _link_cells(link)
        table.add_row(*(safe(cell) for cell in (seed_line, section, title, _middle(url, room), note)))
    return table


def _link_cells(link) -> tuple[str, str, str, str, str]:
    note = link.skip_reason or (f"{len(link.candidates)} repairs if 404" if link.candidates else "")
    return f"{link.seed}:{link.line}", link.section or "", link.title or "", link.url, note  # (the seed as --seed takes it)


def _middle(text: str, width: int) -> str:
    """`text` in `width` characters: its middle gives way (a URL's host and its last part stay)."""
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _links_summary(inventory: Inventory) -> Table:
    """Links, pages and skipped links per seed, for inventories too long to list."""
    from collections import Counter

    links, skipped, pages = Counter(), Counter(), {}
    for link in inventory.links:
        links[link.seed] += 1
        skipped[link.seed] += bool(link.skip_reason)
        pages.setdefault(link.seed, set()).add(link.url)
    from rich.table import Table

    table = Table("seed", title=f"{count(len(inventory.links), 'link')}: too many to list, use --json for every one")
    for column in ("links", "pages", "skipped"):
        table.add_column(column, justify="right")
    for seed, n in links.items():
        table.add_row(safe(seed), str(n), str(len(pages[seed])), str(skipped[seed]))
    return table
