"""`mirror search` and `mirror show`: reading the archive, never writing it. A search's hits are
written as they are, not through rich (importing rich takes 50 ms, a quarter of a search)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .._util.text import readable_date, strip_controls
from ..search import MAX_LIMIT
from ..store import DB_NAME
from ._common import TerminalStyle, fail, open_archive, out, print_json, reading_list, safe, stdout_errors, write_out
from ._options import ArchiveDir


def search_command(
    query: Annotated[str, typer.Argument(help='Words (all must match), "a phrase", prefix*; Chinese works.')],
    archive: ArchiveDir = Path("archive"),
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many hits.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as a JSON array.")] = False,
    site: Annotated[str | None, typer.Option(help="Only pages from this host or site name.")] = None,
    seed: Annotated[str | None, typer.Option(help="Only pages linked from this seed file.")] = None,
    section: Annotated[str | None, typer.Option(help="Only pages linked under this section.")] = None,
) -> None:
    """Full-text search across saved articles, ranked (title above body)."""
    from ..search import SearchError, search, unmatched_filters

    try:
        with open_archive(archive, readonly=True) as store:
            seed = reading_list(store.conn, seed)
            hits = search(store.conn, query, limit=limit, site=site, seed=seed, section=section)
            unmatched = [] if hits else unmatched_filters(store.conn, site=site, seed=seed, section=section)
    except SearchError as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json([h.as_dict() for h in hits])
    elif unmatched:
        given = {"site": site, "seed": seed, "section": section}
        said = ", ".join(f"--{name} {given[name]!r}" for name in unmatched)
        _say(f"no saved article matches {said}: no archived page passes that filter, whatever the words")
    elif not hits:
        _say(f"no saved article matches {query!r}")
    else:
        write_out(_hits_text(hits))


def show(
    page: Annotated[str, typer.Argument(help="A page's URL (as written or normalized) or its id.")],
    archive: ArchiveDir = Path("archive"),
) -> None:
    """Show a saved article as Markdown, with its metadata and where it came from."""
    from rich.markdown import Markdown

    from ..urls import normalize
    from ..store import queries

    with open_archive(archive, readonly=True) as store:
        row = queries.find_page(store.db, page, normalize(page))
        if row is None and "://" not in page and not page.isdigit():  # as `links` reads it: the web's default scheme
            row = queries.find_page(store.db, f"https://{page}", normalize(f"https://{page}")) or queries.find_page(
                store.db, f"http://{page}", normalize(f"http://{page}")
            )
        if row is None:
            fail(f"{page}: no such page in {archive / DB_NAME}", code=1)
        origins = queries.origins(store.db, row["url"])
    with stdout_errors():  # (rich writes it: a full disk is an error, a closed pipe the reader's choice)
        out.print(f"[bold]{safe(row['title'] or row['url'])}[/]")
        facts = [
            ("url", row["url"]),
            ("status", row["status"]),
            ("site", row["sitename"]),
            ("author", row["author"]),
            ("date", readable_date(row["date"])),
            ("language", row["language"]),
            ("captured", readable_date(row["fetched_at"])),
            ("error", row["error_message"]),
            ("same article as", row.get("same_as")),
        ]
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
        sys.stdout.flush()  # (here: a full disk is said, not left to Python's exit)


def _hits_text(hits: list) -> str:
    """Numbered hits with their snippets, in SGR styles for a colour terminal only."""
    style = TerminalStyle(sys.stdout)
    lines = []
    for n, hit in enumerate(hits, 1):
        match_start, match_end = style.codes("bold", "yellow"), style.codes()
        snippet = strip_controls(hit.as_dict(("\x02", "\x03"))["snippet"], keep="\x02\x03")
        snippet = snippet.replace("\x02", match_start).replace("\x03", match_end) + match_end  # (a mark the text held, closed)
        rot = "  " + style(f"{str(hit.health).replace('_', ' ')} live: saved copy", "red") if hit.rotted else ""
        lines.append(style(f"{n}. {_one_line(hit.title or hit.url)}", "bold") + rot + "  " + style(f"(mirror show {hit.id})", "dim"))
        lines.append(f"   {style(_one_line(hit.url), 'cyan')}  {_one_line(hit.sitename or '')} {_one_line(readable_date(hit.date))}".rstrip())
        lines.append(f"   {snippet}\n")
    return "\n".join(lines) + "\n"


def _say(message: str) -> None:
    """A line on stderr (the query and filters are the user's, but may hold control characters)."""
    if sys.stderr is not None:
        sys.stderr.write(strip_controls(message) + "\n")


def _one_line(value: str) -> str:
    """A stored value on one line, without control characters: a title cannot forge a hit's lines."""
    return " ".join(strip_controls(value).split())
