"""`mirror search`'s search and its output (`search`), for the typer command in `reading`: the
hits are written as they are, not through rich, which a search does not import."""

from __future__ import annotations

import sys
from pathlib import Path

from .._util.text import readable_date, strip_controls
from ._common import TerminalStyle, fail, open_archive, print_json, write_out


def search(query: str, archive: Path, limit: int, as_json: bool, site: str | None, seed: str | None, section: str | None) -> None:
    """Search the archive and write the hits: a JSON array, or numbered hits with their snippets
    (written as they are, not through rich: importing rich takes 50 ms, a quarter of a search)."""
    from ..search import SearchError, search, unmatched_filters

    try:
        with open_archive(archive, readonly=True) as store:
            hits = search(store.conn, query, limit=limit, site=site, seed=seed, section=section)
            unmatched = [] if hits else unmatched_filters(store.conn, site=site, seed=seed, section=section)
    except SearchError as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json([h.as_dict() for h in hits])
        return
    if unmatched:
        given = {"site": site, "seed": seed, "section": section}
        said = ", ".join(f"--{name} {given[name]!r}" for name in unmatched)
        _say(f"no saved article matches {said}: no archived page passes that filter, whatever the words")
        return
    if not hits:
        _say(f"no saved article matches {query!r}")
        return
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
    write_out("\n".join(lines) + "\n")


def _say(message: str) -> None:
    """A line on stderr (the query and filters are the user's, but may hold control characters)."""
    if sys.stderr is not None:
        sys.stderr.write(strip_controls(message) + "\n")


def _one_line(value: str) -> str:
    """A stored value on one line, without control characters: a title cannot forge a hit's lines."""
    return " ".join(strip_controls(value).split())
