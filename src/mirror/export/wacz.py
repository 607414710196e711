"""The archive (or some of its pages) as a WACZ: what ReplayWeb.page, pywb and the other
Webrecorder tools open and search.

The selected pages' records are copied byte for byte into one WARC file (their redirects,
versions and revisits, images, a rendering's responses, screenshots; no requests), then the `wacz` package packs
it: the CDXJ index (cdxj-indexer), `pages/pages.jsonl` — each article's title and the text mirror
extracted, so a player's search finds what `mirror search` finds — and `datapackage.json` with every
file's digest. The file appears whole or not at all: it is written beside its name and renamed.

ReplayWeb.page searches that text with FlexSearch's defaults: words are what lies between spaces
and punctuation, and a word is found only whole, so a Chinese sentence is one word and 税收 in
"…到期税收优惠…" was not found. Each page's text is followed by its Chinese (Japanese, Korean)
words as the player's search can find them (`_player_words`): every run of 1 to 4 CJK characters
of the text, and the Latin words glued to them ("GPU加速": GPU), each once, after the text, where
the player's snippet (the first place the query is found) never shows them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._enums import PageStatus, ResourceStatus
from .._util.segment import cjk_runs, is_cjk, word_runs
from ..store.queries import warc_location
from ..warc import original
from ..warc.subset import copy_records
from ._select import archived_pages

__all__ = ["WaczError", "WaczSummary", "export_wacz"]

_COLUMNS = (
    "id, url, final_url, title, text, fetched_at, images, warc_file, warc_offset, warc_length, "
    "screenshot_warc_file, screenshot_warc_offset, full_screenshot_warc_offset"
)
# where else a page's captures are: each version's record, each attempt's last response
_LOCATIONS = (
    "select page_url, warc_file, warc_offset from versions where warc_file is not null",
    "select url, warc_file, warc_offset from attempts where warc_file is not null",
)


class WaczError(ValueError):
    """Nothing to export, or the package could not be made."""


@dataclass
class WaczSummary:
    pages: int = 0
    records: int = 0
    bytes: int = 0  # of the WACZ file
    damaged: list[str] | None = None  # WARC files read only up to a damaged record
    missing: int = 0  # captures the database names that were not found in the WARC files


def export_wacz(
    db, archive_dir: Path, out: Path, *, seed: str | None = None, site: str | None = None, since: str | None = None, title: str | None = None
) -> WaczSummary:
    """Write the archived pages (of `seed`, of `site`, captured `since` an ISO date) to `out` as a WACZ."""
    pages = list(archived_pages(db, _COLUMNS, seed=seed, site=site, since=since))
    duplicates = _duplicates(db, seed) if not (site or since) else {}
    taken = {page["url"] for page in pages}
    originals = sorted({original for original in duplicates.values() if original not in taken})
    pages += (
        list(
            db.query(
                f"select {_COLUMNS} from pages where status = ? and url in ({', '.join('?' for _ in originals)})", [PageStatus.ARCHIVED, *originals]
            )
        )
        if originals
        else []
    )
    if not pages:
        raise WaczError("no archived page matches: nothing to export")
    urls = {page["url"] for page in pages} | set(duplicates)  # a duplicate's own records: the redirect that led to its original
    locations = _locations(db, pages, urls)
    out = Path(out)
    summary = WaczSummary(pages=len(pages))
    with tempfile.TemporaryDirectory(prefix=".mirror-wacz-", dir=out.parent) as folder:  # (not out's name: it may be long)
        work = Path(folder)
        warc = work / "mirror-export.warc.gz"
        redirected = {page["url"] for page in pages if page["final_url"] and page["final_url"] != page["url"]}
        subset = copy_records(archive_dir, warc, locations=locations, pages=urls, software=_software(), redirected=redirected)
        summary.records, summary.damaged = len(subset.copied), subset.damaged
        summary.missing = len(locations - subset.copied)
        listing = work / "pages.jsonl"
        _write_pages(listing, archive_dir, pages, title)
        packed = work / "export.wacz"
        _pack(packed, warc, listing, title)
        os.replace(packed, out)
    summary.bytes = out.stat().st_size
    return summary


def _duplicates(db, seed: str | None) -> dict[str, str]:
    """The pages (of `seed`'s links) archived under another link (a redirect to it, the same
    canonical URL): duplicate -> its original, which the export then takes too."""
    linked = " and url in (select url from links where seed = ?)" if seed else ""
    rows = db.execute(
        f"select url, same_as from pages where status = ? and same_as is not null{linked}", [PageStatus.DUPLICATE, *([seed] if seed else [])]
    )
    return dict(rows.fetchall())


def _software() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mirror {version('mirror')}"
    except PackageNotFoundError:
        return "mirror"


def _locations(db, pages: list[dict], urls: set[str]) -> set[tuple[str, int]]:
    found: set[tuple[str, int]] = set()
    for page in pages:
        found.add((page["warc_file"], page["warc_offset"]))
        if page["screenshot_warc_file"]:
            found.add((page["screenshot_warc_file"], page["screenshot_warc_offset"]))
            if page["full_screenshot_warc_offset"] is not None:
                found.add((page["screenshot_warc_file"], page["full_screenshot_warc_offset"]))
    for sql in _LOCATIONS:
        found.update((file, offset) for url, file, offset in db.execute(sql) if url in urls)
    # a page's resources, and the archived images its article shows: an image two pages show is
    # one `resources` row, under the page that fetched it first
    shown = {image for page in pages for image in json.loads(page["images"] or "[]") if isinstance(image, str)}
    found.update(
        (file, offset)
        for page_url, url, status, file, offset in db.execute(
            "select page_url, url, status, warc_file, warc_offset from resources where warc_file is not null"
        )
        if page_url in urls or (url in shown and status == ResourceStatus.ARCHIVED)
    )
    return {(file, offset) for file, offset in found if file and offset is not None}


def _write_pages(path: Path, archive_dir: Path, pages: list[dict], title: str | None) -> None:
    """pages.jsonl: a header, then each page at the URL and time of its saved capture (what a
    player asks its index for), with its title and extracted text."""
    with open(path, "w", encoding="utf-8") as f:
        header = {"format": "json-pages-1.0", "id": "pages", "title": title or "Pages", "hasText": True}
        f.write(json.dumps(header) + "\n")  # ASCII: the packer reads it in the locale's encoding
        for page in pages:
            record = original(archive_dir, warc_location(page))
            entry = {
                "id": f"page-{page['id']}",
                "url": record.url if record else page["final_url"] or page["url"],
                "ts": record.date if record else page["fetched_at"],
                "title": page["title"] or page["url"],
                "text": _player_text(page["text"] or ""),
            }
            f.write(json.dumps(entry) + "\n")


PLAYER_NGRAMS = 4  # longest run of CJK characters written out for the player's whole-word search


def _player_text(text: str) -> str:
    words = _player_words(text)
    return f"{text}\n\n{' '.join(words)}" if words else text


def _player_words(text: str) -> list[str]:
    """The words a player that finds only whole words needs besides `text`'s own, each once: the
    1- to PLAYER_NGRAMS-character runs of each CJK run, and the other letters glued to CJK."""
    words: dict[str, None] = {}
    for token in re.findall(r"[^\W_]+", text):
        if not any(is_cjk(char) for char in token) or len(token) == 1:
            continue
        for run in word_runs(token):
            if not is_cjk(run[0]):
                words[run] = None
        for run in cjk_runs(token):
            for size in range(1, PLAYER_NGRAMS + 1):
                for start in range(len(run) - size + 1):
                    words[run[start : start + size]] = None
    return list(words)


def _pack(path: Path, warc: Path, listing: Path, title: str | None) -> None:
    """The `wacz` package's own writer (it prints as it goes: kept for an error message)."""
    from wacz.main import main as wacz

    args = ["create", "--output", str(path), "--pages", str(listing), "--copy-pages", "--hash-type", "sha256"]
    if title:
        args += ["--title", title]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = wacz([*args, str(warc)])
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the library's failure, for a person
        raise WaczError(f"the WACZ could not be packed: {exc}; {printed.getvalue().strip()[-300:]}") from None
    if code != 0:
        raise WaczError(f"the WACZ could not be packed: {printed.getvalue().strip()[-300:]}")
