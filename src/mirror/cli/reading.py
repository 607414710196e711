"""`mirror search` and `mirror show`: reading the archive, never writing it. Both end without
Python's teardown (`entry._end_now`). `search_command` declares `mirror search`'s options for
typer (its help, its errors); `searching` runs the search, and reads those options itself
whenever it can, so that `mirror search` starts without typer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._util.text import readable_date, strip_controls
from ..search import MAX_LIMIT
from ..store import DB_NAME
from ._common import fail, open_archive, out, safe, stdout_errors
from ._options import ArchiveDir


def search_command(
    query: Annotated[str, typer.Argument(help="Words (all must match), \"a phrase\", prefix*; Chinese works.")],
    archive: ArchiveDir = Path("archive"),
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many hits.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as a JSON array.")] = False,
    site: Annotated[str | None, typer.Option(help="Only pages from this host or site name.")] = None,
    seed: Annotated[str | None, typer.Option(help="Only pages linked from this seed file.")] = None,
    section: Annotated[str | None, typer.Option(help="Only pages linked under this section.")] = None,
) -> None:
    """Full-text search across saved articles, ranked (title above body)."""
    from .searching import search

    search(query, archive, limit, as_json, site, seed, section)


def show(
    page: Annotated[str, typer.Argument(help="A page's URL (as written or normalized) or its id.")],
    archive: ArchiveDir = Path("archive"),
) -> None:
    """Show a saved article as Markdown, with its metadata and where it came from."""
    from rich.markdown import Markdown

    from ..seeds.urls import normalize
    from ..store import queries

    with open_archive(archive, readonly=True) as store:
        row = queries.find_page(store.db, page, normalize(page))
        if row is None and "://" not in page and not page.isdigit():  # as `links` reads it: the web's default scheme
            row = queries.find_page(store.db, f"https://{page}", normalize(f"https://{page}")) or \
                queries.find_page(store.db, f"http://{page}", normalize(f"http://{page}"))
        if row is None:
            fail(f"{page}: no such page in {archive / DB_NAME}", code=1)
        origins = queries.origins(store.db, row["url"])
    with stdout_errors():  # (rich writes it: a full disk is an error, a closed pipe the reader's choice)
        out.print(f"[bold]{safe(row['title'] or row['url'])}[/]")
        facts = [("url", row["url"]), ("status", row["status"]), ("site", row["sitename"]), ("author", row["author"]),
                 ("date", readable_date(row["date"])), ("language", row["language"]), ("captured", readable_date(row["fetched_at"])),
                 ("error", row["error_message"]), ("same article as", row.get("same_as"))]
        for name, value in facts:
            if value:
                out.print(f"[dim]{name}:[/] {safe(value)}")
        for origin in origins:
            where = f"{origin['seed']}:{origin['line']}" + (f" ({origin['section']})" if origin["section"] else "")
            out.print(f"[dim]from:[/] {safe(where)}")
        out.print()
        if row["markdown"]:
            out.print(Markdown(strip_controls(row["markdown"])))
        elif row["description"]:
            out.print(safe(row["description"]))
        else:
            out.print("[dim](no article text saved for this page)[/]")
