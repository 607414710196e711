"""`mirror search` and `mirror show`: reading the archive, never writing it. `search` is declared
here for typer (its help, its errors) and runs `searching.search`, which writes the hits as they
are, not through rich (importing rich takes 50 ms, a quarter of a search)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .._util.text import one_line, readable_date, strip_controls
from ..search import MAX_LIMIT
from ..store import DB_NAME
from ._common import fail, open_archive, out, safe, stdout_errors, write_out
from ._options import ArchiveDir


def search_command(
    query: Annotated[str, typer.Argument(help='Words (all must match), "a phrase", prefix*, a OR b, title:word; Chinese works.')],
    archive: ArchiveDir = Path("archive"),
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many hits.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as a JSON array.")] = False,
    site: Annotated[str | None, typer.Option(help="Only pages from this host or site name.")] = None,
    seed: Annotated[str | None, typer.Option(help="Only pages linked from this seed file.")] = None,
    section: Annotated[str | None, typer.Option(help="Only pages linked under this section.")] = None,
) -> None:
    """Full-text search across saved articles, ranked (title above body).

    Piped, each hit's matched words are marked [like this] (as in --json's snippets).
    """
    from .searching import search

    search(query, archive, limit, as_json, site, seed, section)


def show(
    page: Annotated[str, typer.Argument(help="A page's URL (as written or normalized) or its id.")],
    archive: ArchiveDir = Path("archive"),
) -> None:
    """Show a saved article as Markdown, with its metadata and where it came from.

    On a terminal it is rendered and paged ($PAGER, else less); piped, it is plain Markdown.
    """
    from ..store import queries
    from ..urls import normalize

    with open_archive(archive, readonly=True) as store:
        row = queries.find_page(store.db, page, normalize(page))
        if row is None and "://" not in page and not page.isdigit():  # as `links` reads it: the web's default scheme
            row = queries.find_page(store.db, f"https://{page}", normalize(f"https://{page}")) or queries.find_page(
                store.db, f"http://{page}", normalize(f"http://{page}")
            )
        if row is None:
            fail(f"{page}: no such page in {archive / DB_NAME}", code=1)
        origins = queries.origins(store.db, row["url"])
    facts = [
        ("url", row["url"]),
        ("status", row["status"]),
        ("site", row["sitename"]),
        ("author", row["author"]),
        ("date", readable_date(row["date"])),
        ("language", row["language"]),
        ("tags", ", ".join(_tags(row, origins))),
        ("captured", readable_date(row["fetched_at"])),
        ("error", row["error_message"]),
        ("same article as", row.get("same_as")),
    ]
    facts += [("from", f"{o['seed']}:{o['line']}" + (f" ({o['section']})" if o["section"] else "")) for o in origins]
    hint = _hint(row)
    if not out.is_terminal:  # piped or to a file: the Markdown as it is, every URL whole, for a file or another tool
        lines = [one_line(row["title"] or row["url"]), *(f"{name}: {one_line(str(value))}" for name, value in facts if value), ""]
        body = strip_controls(row["markdown"] or row["description"] or "").strip()
        lines += [body] if body else []
        lines += [f"({hint})"] if hint else [] if body else ["(no article text saved for this page)"]
        write_out("\n".join(lines) + "\n")
        return
    _show_on_terminal(row, facts, hint)


def _show_on_terminal(row: dict, facts: list[tuple[str, object]], hint: str | None) -> None:
    """The page rendered by rich, through a pager when it is longer than the screen."""
    from rich.markdown import Markdown

    # (rich writes it: a full disk is an error, a closed pipe the reader's choice)
    with stdout_errors(), out.pager(pager=_Pager(), styles=True):
        out.print(f"[bold]{safe(row['title'] or row['url'])}[/]")
        for name, value in facts:
            if value:
                out.print(f"[dim]{name}:[/] {safe(value)}", overflow="ignore", crop=False)
        out.print()
        if row["markdown"]:
            out.print(Markdown(strip_controls(row["markdown"])))
        elif row["description"]:
            out.print(safe(row["description"]))
        elif not hint:
            out.print("[dim](no article text saved for this page)[/]")
        if hint:
            out.print(f"[yellow]{safe(hint)}[/]")
    sys.stdout.flush()  # (here: a full disk is said, not left to Python's exit)


def _tags(row: dict, origins: list[dict]) -> list[str]:
    """The page's own tags (its metadata's) and those its links were saved with (Pocket, bookmarks), once each."""
    tags = [t.strip() for t in (row.get("tags") or "").split(",")]
    tags += [t.strip() for o in origins for t in (o.get("tags") or "").split(",")]
    return list(dict.fromkeys(t for t in tags if t))


def _hint(row: dict) -> str | None:
    """What to do about a page with no article: fetch it, retry it, log in."""
    status, error = row["status"], row.get("error") or ""
    if status == "pending":
        return "not fetched yet: `mirror fetch` fetches it"
    if status == "failed":
        if error == "blocked" or (row.get("http_status") or 0) in (401, 403):
            return "the site refused us: export your cookies for it and run `mirror fetch --cookies cookies.txt --retry-failed`"
        why = f" ({error})" if error else ""
        return f"the fetch failed{why}: `mirror fetch --retry-failed` tries again, `--wayback` takes the Internet Archive's copy"
    if status == "skipped":
        return "not a web page mirror fetches (its link is kept in the reading list)"
    if status == "no_text":
        snapshot = f"/-/mirror/snapshot/{row['id']}" if row.get("warc_file") else None
        return "no article text in this page" + (f": `mirror serve` shows the captured page at {snapshot}" if snapshot else "")
    return None


class _Pager:
    """rich's pager for `mirror show`: $PAGER, else `less -FRX` (it quits at once on a page that
    fits the screen and keeps the colours); neither, the text is written as it is."""

    def show(self, content: str) -> None:
        import os
        import shlex
        import shutil
        import subprocess

        command = shlex.split(os.environ.get("PAGER", "")) or (["less", "-FRX"] if shutil.which("less") else [])
        if command and command[0] == "less" and len(command) == 1:
            command.append("-FRX")
        try:
            if command:
                subprocess.run(command, input=content, text=True, check=False)
                return
        except OSError:  # a PAGER that cannot be run: the text as it is
            pass
        sys.stdout.write(content)
