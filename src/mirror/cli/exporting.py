"""`mirror export`: the archive in formats other tools read (Markdown for notes apps, EPUB for
e-readers, WACZ for web-archive players)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._util.text import count
from ._common import err, fail, open_archive, reading_list, safe
from ._options import ArchiveDir

export_app = typer.Typer(
    no_args_is_help=True,
    help=(
        "Export the archive for other tools: markdown (a notes vault), epub (a reading list as a book), "
        "wacz (for web-archive players), bookmarks (for browsers and bookmark services)."
    ),
)


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
    from ..export import export_markdown

    since = _since(since)
    if folder.exists() and not folder.is_dir():
        fail(f"{folder}: not a folder", code=2)
    with open_archive(archive) as store:
        seed = reading_list(store.db, seed)
        try:
            summary = export_markdown(store.db, store.path, folder, seed=seed, site=site, since=since)
        except OSError as exc:
            fail(f"{folder}: cannot write the export ({exc.strerror or exc})")
    err.print(
        f"{count(summary.articles, 'article')} exported to {safe(str(folder))}: {count(summary.written, 'file')} written, "
        f"{summary.unchanged} unchanged, {count(summary.images, 'image')}" + _never_archived(summary.missing_images)
    )


@export_app.command("epub")
def epub(
    file: Annotated[Path, typer.Argument(help="The book to write (FILE.epub).", dir_okay=False)],
    seed: Annotated[
        str | None,
        typer.Option(help="The reading list to make a book of (its path, or its file's name).", show_default="every list: the whole archive"),
    ] = None,
    archive: ArchiveDir = Path("archive"),
) -> None:
    """A reading list as a book: one chapter per archived article in the list's order, its sections
    as parts, archived images embedded, title, author, date and source URL at the head of each chapter.
    Without --seed, the whole archive: every reading list a part."""
    from ..export import EpubError, export_epub

    with open_archive(archive) as store:
        seed = reading_list(store.db, seed)
        try:
            summary = export_epub(store.db, store.path, file, seed)
        except EpubError as exc:
            fail(str(exc), code=2)
        except OSError as exc:
            fail(f"{file}: cannot write the book ({exc.strerror or exc})")
    err.print(f"{safe(str(file))}: {count(summary.chapters, 'chapter')}, {count(summary.images, 'image')}" + _never_archived(summary.missing_images))


@export_app.command("wacz")
def wacz(
    file: Annotated[Path, typer.Argument(help="The package to write (FILE.wacz); replaced whole when it exists.", dir_okay=False)],
    archive: ArchiveDir = Path("archive"),
    seed: Annotated[str | None, typer.Option(help="Only the pages this reading list links.")] = None,
    site: Annotated[str | None, typer.Option(help="Only the pages of this site (a host and its subdomains).")] = None,
    since: Annotated[str | None, typer.Option(help="Only the pages captured since this date (2026-01-31, or an ISO time).")] = None,
    title: Annotated[str | None, typer.Option(help="The collection's title, shown by the player.")] = None,
) -> None:
    """The archived pages' captures as a WACZ, which ReplayWeb.page and pywb replay: their WARC records
    (redirects, versions, images), a CDXJ index, and each article's title and text for the player's search."""
    from ..export import WaczError, export_wacz

    since = _since(since)
    if file.is_dir():
        fail(f"{file}: is a folder; name the .wacz file to write", code=2)
    if not file.parent.is_dir():
        fail(f"{file.parent}: no such folder", code=2)
    with open_archive(archive) as store:
        seed = reading_list(store.db, seed)
        try:
            summary = export_wacz(
                store.db,
                store.path,
                file,
                seed=seed,
                site=site,
                since=since,
                title=title or (f"mirror: {seed}" if seed else f"mirror: {site}" if site else "mirror"),
            )
        except WaczError as exc:
            fail(str(exc), code=2)
        except OSError as exc:
            fail(f"{file}: cannot write the package ({exc.strerror or exc})")
    for name in summary.damaged or []:
        err.print(f"warning: {safe(name)} is damaged; its records before the damage are in the package")
    if summary.missing:
        were = "was" if summary.missing == 1 else "were"
        err.print(f"warning: {count(summary.missing, 'capture')} the archive names {were} not found in its WARC files (damaged or missing files)")
    err.print(f"{safe(str(file))}: {count(summary.pages, 'page')}, {count(summary.records, 'WARC record')}, {summary.bytes / 1e6:,.1f} MB")


def _never_archived(missing: int) -> str:
    return f", {count(missing, 'image')} never archived (a note in {'its' if missing == 1 else 'their'} place)" if missing else ""


@export_app.command("bookmarks")
def bookmarks(
    file: Annotated[Path, typer.Argument(help="The bookmark file to write (FILE.html); replaced whole when it exists.", dir_okay=False)],
    archive: ArchiveDir = Path("archive"),
    seed: Annotated[str | None, typer.Option(help="Only this reading list (as `mirror links` names it): its links at the top.")] = None,
) -> None:
    """The reading lists as a Netscape bookmark file, which browsers, Linkwarden, Karakeep, linkding and
    wallabag import: each list a folder, its sections folders inside it, each link with its title, tags
    and the date it was saved. `mirror links FILE.html` reads it back."""
    from ..export.bookmarks import BookmarksError, export_bookmarks

    if file.is_dir():
        fail(f"{file}: is a folder; name the .html file to write", code=2)
    if not file.parent.is_dir():
        fail(f"{file.parent}: no such folder", code=2)
    with open_archive(archive) as store:
        try:
            summary = export_bookmarks(store.db, file, seed=seed)
        except BookmarksError as exc:
            fail(str(exc), code=2)
        except OSError as exc:
            fail(f"{file}: cannot write the bookmarks ({exc.strerror or exc})")
    err.print(
        f"{safe(str(file))}: {count(summary.bookmarks, 'bookmark')} in {count(summary.lists, 'reading list')}"
        + (f", {count(summary.not_web, 'link')} with no web address left out" if summary.not_web else "")
    )


def _since(since: str | None) -> str | None:
    """--since as an ISO time (exit 2 for what is not a date)."""
    from datetime import datetime

    if since is None:
        return None
    try:
        return datetime.fromisoformat(since).isoformat()
    except ValueError:
        fail(f"--since {since!r}: write a date as 2026-01-31 (or an ISO time)", code=2)
