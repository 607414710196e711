"""`mirror add`: pages the user's browser saved (SingleFile's HTML, Chromium's MHTML, a saved
.html with --url), added to the archive as fetched pages are, marked as added by the user."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import err, fail, open_archive, print_json, safe
from ._options import ArchiveDir


def add(
    files: Annotated[list[Path], typer.Argument(help="Saved pages: SingleFile .html, MHTML (.mhtml, .mht), or .html with --url.", dir_okay=False)],
    url: Annotated[
        str | None, typer.Option(help="The page's address, for a saved .html that does not say it (or to say another than the file does).")
    ] = None,
    archive: ArchiveDir = Path("archive"),
    as_json: Annotated[bool, typer.Option("--json", help="Print what became of each file as JSON.")] = False,
) -> None:
    """Add pages your browser saved: SingleFile's HTML (its address and date read from the file),
    Chromium's MHTML ("Save as: Webpage, single file"), or a saved .html with --url. Each is
    stored in the WARC files, extracted and indexed like a fetched page, and shown in the reader
    as added by you, with the file it came from. A page behind a login (zhihu, WeChat) saved from
    your logged-in browser is archived as you saw it. Exit 1 if a file could not be added.

    Examples: mirror add saved.html; mirror add page.mhtml; mirror add page.html --url https://example.com/post.
    """
    from ..saved.add import add_saved
    from ..saved.read import SavedPageError, read_path

    if url is not None and len(files) > 1:
        fail("--url names one page: give one file with it", code=2)
    pages, failed = [], 0
    for path in files:
        try:
            pages.append(read_path(path, url))
        except SavedPageError as exc:
            err.print(f"[bold red]not added:[/] {safe(exc)}")
            failed += 1
    results = []
    if pages:
        from ..extract.pool import safe_extract

        with open_archive(archive, create=True, lock=True) as store:
            for page in pages:
                added = add_saved(store, page, lambda location, page_url: safe_extract(str(store.path), location, page_url), "mirror add")
                results.append(added)
                if not as_json:
                    _tell(added, page.file_name)
    if as_json:
        print_json([added.as_dict() for added in results])
    if failed:
        raise typer.Exit(1)


def _tell(added, file_name: str) -> None:
    title = f" — {safe(added.title)}" if added.title else ""
    line = f"added {safe(file_name)}: {safe(added.url)} ({added.status}){title}"
    if added.id is not None:
        line += f"; read it at /-/mirror/page/{added.id} (mirror show {added.id})"
    err.print(line)
    if added.note:
        err.print(f"  [yellow]note:[/] {safe(added.note)}")
