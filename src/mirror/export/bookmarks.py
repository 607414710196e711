"""The reading lists as a Netscape bookmark file: what every browser, Linkwarden, Karakeep,
linkding and wallabag import, so that leaving mirror takes the lists along.

Each reading list is a folder named by its title (its `# heading`, else its file name), each of
its sections a folder inside it, in the list's own order; each link carries its title (the
list's, else the archived page's), its tags (TAGS, as the bookmark services write them) and the
date it was saved (ADD_DATE: the date an import gave it, else when mirror first recorded it).
Only web addresses are written: a `javascript:` or `file:` link is no bookmark to hand a browser.
With one reading list (`--seed`) its links stand at the top, its sections as folders, so that
`mirror links FILE.html` reads back exactly its links: URLs, titles, sections, tags and dates
(the file has no <H1>, which a reader takes for the section of the links outside folders).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path

from .._util.files import replaced_whole

__all__ = ["BookmarksError", "BookmarksSummary", "export_bookmarks"]

_WEB = ("http://", "https://")
_HEAD = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<!-- This is an automatically generated file.
     It will be read and overwritten.
     DO NOT EDIT! -->
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>{title}</TITLE>
<DL><p>
"""


class BookmarksError(ValueError):
    """Nothing to export (no such reading list, no links); the message says why."""


@dataclass
class BookmarksSummary:
    lists: int = 0
    bookmarks: int = 0
    not_web: int = 0  # links that are no web address (javascript:, mailto:, a relative path): left out


def export_bookmarks(db, out: Path, *, seed: str | None = None) -> BookmarksSummary:
    """Write the links of every reading list (or of `seed`) to `out` as a Netscape bookmark file."""
    where, values = ("where links.seed = ?", [seed]) if seed else ("", [])
    rows = list(
        db.query(
            "select links.seed, links.section, links.url, links.url_as_written, coalesce(links.title, pages.title) as title, "
            "links.tags, coalesce(links.added, pages.first_seen) as added, seeds.title as list_title "
            f"from links left join pages on pages.url = links.url left join seeds on seeds.seed = links.seed {where} "
            "order by links.seed, links.line, links.col",
            values,
        )
    )
    if not rows:
        raise BookmarksError(f"no reading list {seed!r} in this archive (`mirror links` names them)" if seed else "no links in this archive yet")
    summary = BookmarksSummary()
    lists = [(name, list(links)) for name, links in groupby(rows, key=lambda row: row["seed"])]
    one = seed is not None and len(lists) == 1
    title = _list_title(lists[0][0], lists[0][1]) if one else "mirror: reading lists"
    parts = [_HEAD.format(title=html.escape(title, quote=False))]
    for name, links in lists:
        summary.lists += 1
        depth = 1
        if not one:
            parts.append(_folder(_list_title(name, links), 1))
            depth = 2
        for section, run in groupby(links, key=lambda row: row["section"]):
            inner = depth
            if section:
                parts.append(_folder(section, depth))
                inner = depth + 1
            for row in run:
                if not _is_web(row):
                    summary.not_web += 1
                    continue
                parts.append(_bookmark(row, inner))
                summary.bookmarks += 1
            if section:
                parts.append(_end(depth))
        if not one:
            parts.append(_end(1))
    parts.append("</DL><p>\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    with replaced_whole(out) as temporary:  # a stopped export leaves no file that looks whole
        temporary.write_text("".join(parts), encoding="utf-8")
    return summary


def _list_title(name: str, links: list[dict]) -> str:
    return links[0]["list_title"] or Path(name).stem or name


def _is_web(row: dict) -> bool:
    return row["url"].lower().startswith(_WEB)


def _folder(name: str, depth: int) -> str:
    pad = "    " * depth
    return f"{pad}<DT><H3>{html.escape(' '.join(name.split()), quote=False)}</H3>\n{pad}<DL><p>\n"


def _end(depth: int) -> str:
    return f"{'    ' * depth}</DL><p>\n"


def _bookmark(row: dict, depth: int) -> str:
    attributes = f'HREF="{html.escape(row["url"])}"'
    if stamp := _unix(row["added"]):
        attributes += f' ADD_DATE="{stamp}"'
    if row["tags"]:
        names = [tag.strip() for tag in row["tags"].split(",") if tag.strip()]
        # (a lone tag with a space gets a comma after it: readers split a comma-less TAGS at spaces)
        tags = ",".join(names) + ("," if len(names) == 1 and " " in names[0] else "")
        attributes += f' TAGS="{html.escape(tags)}"'
    title = " ".join((row["title"] or row["url"]).split())
    return f"{'    ' * depth}<DT><A {attributes}>{html.escape(title, quote=False)}</A>\n"


def _unix(value: str | None) -> int | None:
    """An ISO time as Unix seconds (a time without its zone is UTC, as mirror writes them)."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())
