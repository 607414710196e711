"""Feeds given to `mirror fetch` as URLs (RSS, Atom, OPML): the feed is archived as a page like
any other, then its entries are read from its newest capture as a reading list named by the
feed's URL, and fetched. A feed already archived is read from its saved copy (`--refresh` asks
it again). A feed is someone else's list: its entries get neither the user's `--header` values
nor an address more private than the feed's own (`feed_reach`)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from .. import warc
from ..http.gate import Reach, reach_of_ip
from ..seeds.documents import Inventory
from ..seeds.imports import feed_kind, parse_feed
from ..store.queries import warc_location

__all__ = ["feed_entries", "feed_reach"]

MAX_FEED_BYTES = 20_000_000  # decoded; a feed larger than this is archived, not read
_NOT_FEEDS = ("image/", "video/", "audio/", "font/", "application/pdf", "application/zip")


def feed_entries(db, archive_dir, urls: list[str]) -> Inventory:
    """The entries of those `urls` whose newest capture is a feed, one reading list per feed."""
    inventory = Inventory()
    for url in dict.fromkeys(urls):
        row = next(db.query("select url, final_url, content_type from pages where url = ?", [url]), None)
        if row is None or (row["content_type"] or "").lower().startswith(_NOT_FEEDS):
            continue
        location = _newest_capture(db, url)  # a refreshed feed has new entries
        if location is None:
            continue
        try:
            _, head = warc.read_head(archive_dir, location, 4096)
            if not feed_kind(_ascii(head)):
                continue
            _, body = warc.read_payload(archive_dir, location, MAX_FEED_BYTES)
        except warc.WarcError as exc:
            inventory.warnings.append(f"{url}: the feed's capture cannot be read ({exc})")
            continue
        links = parse_feed(body, url, inventory.warnings.append, base=row["final_url"] or url)
        if not links:
            inventory.warnings.append(f"{url}: a feed without entries")
        inventory.seeds.append(url)
        inventory.links.extend(links)
    return inventory


def _newest_capture(db, url: str):
    """The page's newest capture with a body: its newest version's record (not a revisit), else its saved copy."""
    row = next(
        db.query(
            "select warc_file, warc_offset, warc_length from versions where page_url = ? and warc_file is not null "
            "and revisit_of is null order by id desc limit 1",
            [url],
        ),
        None,
    )
    row = row or next(db.query("select warc_file, warc_offset, warc_length from pages where url = ? and warc_file is not null", [url]), None)
    return warc_location(row) if row else None


def feed_reach(url: str) -> Reach:
    """How private the feed's own address is (its entries may be no more private): by the system
    resolver, the most private of its addresses; public when it does not resolve."""
    host = urlsplit(url).hostname or ""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return Reach.PUBLIC
    return max((reach_of_ip(a) for a in addresses), default=Reach.PUBLIC)


def _ascii(head: bytes) -> str:
    """The start of a body as the feed test reads it: a UTF-16 feed's tags too, a BOM gone."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            return head[len(bom) :].decode(codec, errors="ignore")
    return head.decode("latin-1")
