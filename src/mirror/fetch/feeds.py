"""Feeds given to `mirror fetch` as URLs (RSS, Atom, OPML): the feed is archived as a page like
any other, then its entries are read from that capture as a reading list named by the feed's URL,
and fetched. A feed already archived is read from its saved copy (`--refresh` asks it again)."""

from __future__ import annotations

from .. import warc
from ..seeds.documents import Inventory
from ..seeds.imports import FEED, parse_feed
from ..store.queries import warc_location

__all__ = ["feed_entries"]

MAX_FEED_BYTES = 20_000_000  # decoded; a feed larger than this is archived, not read
_NOT_FEEDS = ("image/", "video/", "audio/", "font/", "application/pdf", "application/zip")


def feed_entries(db, archive_dir, urls: list[str]) -> Inventory:
    """The entries of those `urls` whose saved capture is a feed, one reading list per feed."""
    inventory = Inventory()
    for url in dict.fromkeys(urls):
        row = next(db.query("select url, final_url, content_type, warc_file, warc_offset, warc_length from pages "
                            "where url = ? and warc_file is not null", [url]), None)
        if row is None or (row["content_type"] or "").lower().startswith(_NOT_FEEDS):
            continue
        location = warc_location(row)
        try:
            _, head = warc.read_head(archive_dir, location, 4096)
            if not FEED.match(_ascii(head)):
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


def _ascii(head: bytes) -> str:
    """The start of a body as the feed test reads it: a UTF-16 feed's tags too, a BOM gone."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            return head[len(bom):].decode(codec, errors="ignore")
    return head.decode("latin-1")
