"""`mirror search`'s search and its output (`search`), for the typer command in `reading`: the
hits are written as they are, not through rich, which a search does not import."""

from __future__ import annotations

import sys
from pathlib import Path

from .._util.text import one_line, readable_date, strip_controls
from ._common import TerminalStyle, fail, open_archive, print_json, reading_list, write_out


def search(query: str, archive: Path, limit: int, as_json: bool, site: str | None, seed: str | None, section: str | None) -> None:
    """Search the archive and write the hits: a JSON array, or numbered hits with their snippets
    (written as they are, not through rich: importing rich takes 50 ms, a quarter of a search).
    On a terminal the matched words are styled and a last line counts the matches; piped, they
    are marked [like this], as in the JSON's snippets."""
    from ..search import SearchError, count_matches, pending_matches, search, unmatched_filters

    style = TerminalStyle(sys.stdout)
    try:
        with open_archive(archive, readonly=True) as store:
            seed = reading_list(store.conn, seed)
            hits = search(store.conn, query, limit=limit, site=site, seed=seed, section=section)
            unmatched = [] if hits else unmatched_filters(store.conn, site=site, seed=seed, section=section)
            pending = pending_matches(store.conn, query) if not hits and not unmatched and not as_json else (0, 0)
            total = count_matches(store.conn, query, site=site, seed=seed, section=section) if hits and style.styled and not as_json else None
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
        _say(f"no saved article matches {query!r}" + _pending_note(*pending))
        return
    lines = []
    match_start, match_end = (style.codes("bold", "yellow"), style.codes()) if style.styled else ("[", "]")
    for n, hit in enumerate(hits, 1):
        snippet = strip_controls(hit.as_dict(("\x02", "\x03"))["snippet"], keep="\x02\x03")
        snippet = snippet.replace("\x02", match_start).replace("\x03", match_end) + (
            style.codes() if style.styled else ""
        )  # (a mark the text held, closed)
        rot = "  " + style(f"{str(hit.health).replace('_', ' ')} live: saved copy", "red") if hit.rotted else ""
        lines.append(style(f"{n}. {one_line(hit.title or hit.url)}", "bold") + rot + "  " + style(f"(mirror show {hit.id})", "dim"))
        lines.append(f"   {style(one_line(hit.url), 'cyan')}  {one_line(hit.sitename or '')} {one_line(readable_date(hit.date))}".rstrip())
        lines.append(f"   {snippet}\n")
    if total is not None:
        lines.append(style(_count_line(len(hits), *total), "dim"))
    write_out("\n".join(lines) + "\n")


def _count_line(shown: int, total: int, more: bool) -> str:
    """How many articles match, and how many are shown."""
    counted = f"more than {total - 1:,}" if more else f"{total:,}"
    noun = "article matches" if total == 1 and not more else "articles match"
    if shown >= total and not more:
        return f"{counted} {noun}"
    return f"{counted} {noun}; the best {shown} shown (--limit shows more)"


def _pending_note(pages: int, titled: int) -> str:
    """What the archive has not fetched yet that the search may be about."""
    if titled:
        noun, verb, their = ("pages", "have", "their") if titled != 1 else ("page", "has", "its")
        return f"; {titled} {noun} not fetched yet {verb} these words in {their} link title or address: `mirror fetch` fetches them"
    if pages:
        return f" ({pages:,} page{'s' if pages != 1 else ''} not fetched yet: `mirror fetch` fetches them)"
    return ""


def _say(message: str) -> None:
    """A line on stderr (the query and filters are the user's, but may hold control characters)."""
    if sys.stderr is not None:
        sys.stderr.write(strip_controls(message) + "\n")
