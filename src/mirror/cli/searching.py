"""`mirror search` without typer: the search and its output (`search`), and its options read
from the command line in the forms a person types (`read_options`), so that `mirror search`
starts without importing typer (90 ms of a search's 150 here; the options as typer declares
them, for its help and its errors, are `reading.search_command`'s, which calls `search` too). Whatever
`read_options` is not sure of (help, an unknown or repeated option, a value out of range) it
leaves to typer, which parses it again and says what is wrong; a test holds the two to the same
reading of every form this one accepts."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._util.text import readable_date, strip_controls
from ..search import MAX_LIMIT
from ._common import ARCHIVE_ENV, TerminalStyle, fail, open_archive, print_json, reading_list, write_out

# option -> (parameter, takes a value); `--archive` also comes from ARCHIVE_ENV
OPTIONS = {
    "--archive": ("archive", True),
    "--limit": ("limit", True),
    "--json": ("as_json", False),
    "--site": ("site", True),
    "--seed": ("seed", True),
    "--section": ("section", True),
}


def read_options(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object] | None:
    """`search`'s parameters from the arguments after `search`, as typer reads them, or None
    where typer should read them (and say what is wrong with them, if anything is)."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # click's shell-completion request: typer answers it
    given: dict[str, object] = {}
    words: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            words.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name not in OPTIONS:
            return None  # --help, -h, a typo: typer's to answer
        parameter, takes_value = OPTIONS[name]
        if parameter in given or (equals and not takes_value):
            return None
        if takes_value and not equals:
            value = next(rest, None)
            if value is None:
                return None
        given[parameter] = value if takes_value else True
    if len(words) != 1:
        return None
    archive = given["archive"] if "archive" in given else environ.get(ARCHIVE_ENV) or "archive"  # ("" is the folder here)
    try:
        if stat.S_ISREG(os.stat(archive).st_mode):
            return None  # typer says the folder is a file
    except OSError:  # (missing, unreadable, a name too long: as typer, the archive's opening says so)
        pass
    try:
        limit = int(given.get("limit", 20))
    except ValueError:
        return None
    if not 1 <= limit <= MAX_LIMIT:
        return None
    return {
        "query": words[0],
        "archive": Path(archive),
        "limit": limit,
        "as_json": bool(given.get("as_json")),
        "site": given.get("site"),
        "seed": given.get("seed"),
        "section": given.get("section"),
    }


def search(query: str, archive: Path, limit: int, as_json: bool, site: str | None, seed: str | None, section: str | None) -> None:
    """Search the archive and write the hits: a JSON array, or numbered hits with their snippets
    (written as they are, not through rich: importing rich takes 50 ms, a quarter of a search)."""
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
