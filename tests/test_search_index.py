"""The contentless search index (issue 29) held equal to the pages it indexes: whatever writes a
page (a fetch, a refresh, a duplicate, a reindex), the index holds exactly the archived pages'
words, made by the extraction worker as the writer would make them."""

from __future__ import annotations

import sqlite3

from mirror._types import Extraction
from mirror.extract.article import extract
from mirror.search import search
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .fts_check import assert_index_matches_pages
from .helpers import ZH_ARTICLE, extraction_pool, fetch
from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5", "--browser", "never")


def test_the_index_follows_every_change_to_the_pages_it_holds(cli, tmp_path, web):
    """Refreshed, emptied, duplicated, re-extracted: the contentless index always holds exactly
    what the pages' rows make (a page taken out with other values than it went in with would not)."""
    db_path = tmp_path / "archive" / "mirror.db"
    first = web.add("/first", article("第一版", "注意力机制的第一版说明。"))
    other = web.add("/other", article("另一篇", "流水线并行的说明，与第一篇无关。"))
    moved = web.add("/moved", b"", status=301, Location="/first")
    assert cli("fetch", first, other, *QUICK).exit_code == 0
    assert_index_matches_pages(sqlite3.connect(db_path))
    web.add("/first", article("第二版", "注意力机制改写之后的第二版说明。"))
    web.add("/other", b"<html><body><p>gone quiet</p></body></html>")
    assert cli("fetch", first, other, "--refresh", *QUICK).exit_code == 0
    assert cli("fetch", moved, *QUICK).exit_code == 0  # a duplicate of /first
    assert_index_matches_pages(sqlite3.connect(db_path))
    assert cli("reindex").exit_code == 0
    conn = sqlite3.connect(db_path)
    assert_index_matches_pages(conn)
    assert [hit.id for hit in search(conn, "第二版")] and not search(conn, "第一版")


def test_index_values_made_for_other_text_are_not_trusted(tmp_path):
    """An extraction carrying index values made from another text (changed after the worker made
    them) is indexed from what is stored, or its page could never leave the index cleanly."""
    from mirror._types import Extraction
    from mirror._util.segment import index_values
    from mirror.seeds import links_from_urls

    url = "https://example.com/a"
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls([url]))
        stale = index_values("旧标题", "旧的正文", None, None)
        archive.save_extraction(
            url,
            Extraction(
                status="archived",
                kind="html",
                title="新标题",
                text="新的正文，改过了。",
                search_index=stale,
                indexed_from=("旧标题", "旧的正文", None, None),
            ),
        )
        assert_index_matches_pages(archive.db)
        archive.save_extraction(url, Extraction(status="archived", kind="html", title="第三版", text="第三版的正文。"))
        assert_index_matches_pages(archive.db)
        assert [hit.url for hit in search(archive.db, "第三版")] == [url] and not search(archive.db, "旧的")


def test_worker_segments_the_search_index_as_the_writer_would(tmp_path, web):
    """The index values come from the extraction worker; they are exactly what the writer
    makes from the stored row, so a page fetched and a page re-indexed are found alike."""
    from mirror._util.segment import index_values

    body = ZH_ARTICLE.format(meta='<meta name="author" content="张 三">').encode()
    extraction = extract(body, "http://127.0.0.1/a", "text/html")
    assert extraction.status == "archived"
    assert extraction.search_index == index_values(extraction.title, extraction.text, extraction.author, extraction.sitename)
    assert "显存" in extraction.search_index[-1].split()  # a bigram token of the body
    assert extract(b"<html><body><p>too short</p></body></html>", "http://x/", "text/html").search_index is None

    url = web.add("/article-zh", body)
    db, _ = fetch(tmp_path, [url])
    from .fts_check import assert_index_matches_pages

    assert_index_matches_pages(db)  # what the worker made is what the row makes
    assert db.execute("select count(*) from pages_fts where pages_fts match ?", ['body2:"显存"']).fetchone()[0] == 1


def test_reindex_leaves_the_index_holding_exactly_the_archived_pages(tmp_path, web):
    """Re-extracted pages are indexed as they are saved; after them, an archived page
    without a capture is indexed from its row and a stale row of a page without text goes."""
    from mirror.fetch import reindex

    article = web.add("/article-zh", ZH_ARTICLE.format(meta="").encode())
    empty = web.add("/empty", b"<html><body><p>nothing here</p></body></html>")
    db, _ = fetch(tmp_path, [article, empty])
    uncaptured = "http://127.0.0.1:9/typed-in"
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls([uncaptured]))
        text = "混合精度训练的笔记，" * 10
        archive.save_extraction(uncaptured, Extraction(status="archived", kind="text", title="笔记", text=text, markdown=text))
    ids = {url: db["pages"].get(url)["id"] for url in (article, empty, uncaptured)}
    from mirror._fts import index_insert

    db.execute("insert into pages_fts (pages_fts) values ('delete-all')")
    db.execute(*index_insert(ids[empty], db["pages"].get(empty)))  # a stale entry, as it went in
    db.conn.commit()
    web.shutdown()
    with Archive(tmp_path / "archive") as archive:
        counts = reindex(archive, workers=1, pool=extraction_pool())
    assert counts["indexed"] == 2
    assert sorted(r[0] for r in db.execute("select id from pages_fts_docsize")) == sorted([ids[article], ids[uncaptured]])
    found = db.execute("select rowid from pages_fts where pages_fts match ?", ['body2:"精度"']).fetchall()
    assert sorted(r[0] for r in found) == sorted([ids[article], ids[uncaptured]])
    from .fts_check import assert_index_matches_pages

    assert_index_matches_pages(db)
