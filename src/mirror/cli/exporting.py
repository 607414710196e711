"""`mirror export`: the archive in formats other tools read (Markdown for notes apps)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import ArchiveDir, err, fail, open_archive, safe

export_app = typer.Typer(no_args_is_help=True, help="Export the archive for other tools: markdown (a notes vault), epub (a reading list as a book).")


@export_app.command("markdown")
def markdown(
    folder: Annotated[Path, typer.Argument(help="Where to write (created if missing); a re-export rewrites only what changed.", file_okay=False)],
    archive: ArchiveDir = Path("archive"),
    seed: Annotated[str | None, typer.Option(help="Only the articles this reading list links.")] = None,
    site: Annotated[str | None, typer.Option(help="Only the articles of this site (a host and its subdomains).")] = None,
    since: Annotated[str | None, typer.Option(help="Only the articles captured since this date (2026-01-31, or an ISO time).")] = None,
) -> None:
    """One Markdown file per archived article, with YAML front matter (title, url, author, date,
    site, language, captured, reading lists, sections, status) and its archived images saved
    beside it; one index per reading list, in the list's order and sections. Opens as an Obsidian vault."""
    from datetime import datetime

    from ..export import export_markdown

    if since is not None:
        try:
            since = datetime.fromisoformat(since).isoformat()
        except ValueError:
            fail(f"--since {since!r}: write a date as 2026-01-31 (or an ISO time)", code=2)
    if folder.exists() and not folder.is_dir():
        fail(f"{folder}: not a folder", code=2)
    with open_archive(archive) as store:
        try:
            summary = export_markdown(store.db, store.path, folder, seed=seed, site=site, since=since)
        except OSError as exc:
            fail(f"{folder}: cannot write the export ({exc.strerror or exc})")
    err.print(f"{summary.articles} articles exported to {safe(str(folder))}: {summary.written} files written, "
              f"{summary.unchanged} unchanged, {summary.images} images"
              + (f", {summary.missing_images} images never archived (a note in their place)" if summary.missing_images else ""))


@export_app.command("epub")
def epub(
    file: Annotated[Path, typer.Argument(help="The book to write (FILE.epub).", dir_okay=False)],
    seed: Annotated[str | None, typer.Option(help="The reading list to make a book of (as `mirror links` names it); needed when there are several.")] = None,
    archive: ArchiveDir = Path("archive"),
) -> None:
    """A reading list as a book: one chapter per archived article in the list's order, its sections
    as parts, archived images embedded, title, author, date and source URL at the head of each chapter."""
    from ..export import EpubError, export_epub
    from ..export.epub import reading_lists

    with open_archive(archive) as store:
        lists = reading_lists(store.db)
        if seed is None:
            if len(lists) != 1:
                fail(f"--seed names the reading list to make a book of: {', '.join(map(safe, lists)) or 'none yet'}", code=2)
            seed = lists[0]
        try:
            summary = export_epub(store.db, store.path, file, seed)
        except EpubError as exc:
            fail(str(exc), code=2)
        except OSError as exc:
            fail(f"{file}: cannot write the book ({exc.strerror or exc})")
    err.print(f"{safe(str(file))}: {summary.chapters} chapters, {summary.images} images"
              + (f", {summary.missing_images} images never archived (a note in their place)" if summary.missing_images else ""))
