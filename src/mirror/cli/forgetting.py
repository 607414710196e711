"""`mirror forget LIST`: a reading list removed from the archive, after the user said yes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._util.text import count
from ._common import err, open_archive, reading_list, safe
from ._options import ArchiveDir


def forget(
    seed: Annotated[str, typer.Argument(metavar="LIST", help="The reading list: its path, or its file's name (as `mirror links` shows it).")],
    archive: ArchiveDir = Path("archive"),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Forget without asking.")] = False,
) -> None:
    """Remove a reading list from the archive: its links, and the pages no other list links
    (from the reading home, link health, `mirror check`, search and the datasette tables). Their
    captures stay in the WARC files; the list's file is not touched. Asks first, unless --yes.

    Example: mirror forget seeds/004_662669093c051ded.txt
    """
    with open_archive(archive, lock=True) as store:
        seed = reading_list(store.db, seed)
        plan = store.forgetting(seed)
        what = (
            f"reading list {safe(seed)}: {count(plan.links, 'link')}; {count(len(plan.pages), 'page')} no other list links "
            f"({plan.archived} archived) leave the archive's database, their captures stay in the WARC files"
            + (f"; {count(plan.shared, 'page')} other lists link too stay" if plan.shared else "")
        )
        if not yes and not _confirmed(what):
            err.print("not forgotten: nothing was changed (--yes forgets without asking)")
            raise typer.Exit(1)
        store.forget(seed)
    err.print(f"forgot {what}")
    if Path(seed).is_file():
        err.print(f"{safe(seed)} itself is still there: `mirror fetch {safe(seed)}` (or `mirror fetch` if it is in seeds/) would record it again")


def _confirmed(what: str) -> bool:
    """Whether the user says yes (a `y` on the standard input; none, the end of it or anything
    else is a no: a script that forgot --yes changes nothing)."""
    err.print(f"forget {what}?")
    try:
        return typer.confirm("Forget it?", default=False, err=True)
    except typer.Abort:  # (the input ended)
        return False
