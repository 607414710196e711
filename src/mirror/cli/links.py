"""`mirror links`: the reading lists' links recorded in the archive, and shown as a table,
a summary per seed, tab-separated lines or JSON."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._enums import PageStatus
from .._util.text import count, one_line
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
            print("\t".join(one_line(cell) for cell in _link_cells(link)))
    elif len(inventory.links) > TABLE_ROWS:
        out.print(_links_summary(inventory))
    else:
        out.print(_links_table(inventory.links, out.width))
    err.print(
        f"{count(stats.links, 'link')} in {count(len(inventory.seeds), 'seed')} -> {count(stats.pages, 'page')} "
        f"({stats.new_pages} new, {stats.skipped} skipped) recorded in {safe(archive / DB_NAME)}"
    )


def _links_table(links: list, width: int) -> Table:
    """One row a link, in the terminal's width: the seed's name and line, section and note each
    on one line at a width of their own (a longer one loses its middle or its end), the URL on
    one line too (it is copied from here: a longer one loses its middle), and the title wrapping
    in what is left, at least a third of the width."""
    from rich.cells import cell_len
    from rich.table import Table

    rows = [_link_cells(link) for link in links]
    widest = [max((cell_len(row[column]) for row in rows), default=0) for column in range(5)]
    shown = [column for column in range(5) if column in (2, 3) or widest[column]]  # (no empty section or note column)
    room = max(40, width - 3 * len(shown) - 1)  # what the cells have inside the borders and padding
    caps = {0: max(12, room // 5), 1: room // 4, 4: room // 8}  # seed:line, section, note
    widths = {column: min(widest[column], caps[column]) for column in caps if column in shown}
    rest = room - sum(widths.values())
    widths[3] = min(max(widest[3], 3), max(24, rest - max(room // 3, 10)))  # the URL, whole if it fits beside a third for the title
    widths[2] = max(10, rest - widths[3])
    table = Table()
    names = ("seed:line", "section", "title", "url", "note")
    for column in shown:
        if column == 2:
            table.add_column(names[column], width=widths[column], overflow="fold")
        else:
            table.add_column(names[column], width=widths[column], no_wrap=True, overflow="ellipsis")
    for row in rows:
        cells = [_middle(row[column], widths[column]) if column in (0, 3) else row[column] for column in shown]
        table.add_row(*(safe(cell) for cell in cells))
    return table


def _link_cells(link) -> tuple[str, str, str, str, str]:
    note = link.skip_reason or (f"{len(link.candidates)} repairs if 404" if link.candidates else "")
    return f"{link.seed}:{link.line}", link.section or "", link.title or "", link.url, note  # (the seed as --seed takes it)


def _middle(text: str, width: int) -> str:
    """`text` in `width` cells: its middle gives way (a URL's host and its last part, a seed's
    name and its line number stay)."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    end = text[::-1]
    return set_cell_size(text, head) + "…" + set_cell_size(end, tail)[::-1]


def _links_summary(inventory: Inventory) -> Table:
    """Links, pages and skipped links per seed, for inventories too long to list."""
    from collections import Counter

    links: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    pages: dict[str, set[str]] = {}
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
