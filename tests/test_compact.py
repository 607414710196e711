"""Issue 29: the database at most 2.5x its text. The search index keeps no copy of the text
(contentless FTS5), the Markdown is stored compressed, and an archive made by the code of
2026-11-27 (schema 8, tests/fixtures/archive-schema8.db: four Chinese and three English corpus
articles) migrates in place: smaller, with the same search results as before."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from mirror.search import search
from mirror.store import Archive
from mirror.store.queries import with_markdown
from mirror.store.schema import SCHEMA_VERSION

from .fts_check import assert_index_matches_pages
from .webserver import article

FIXTURE = Path(__file__).parent / "fixtures" / "archive-schema8.db"
QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5", "--browser", "never")
# held out: what search returned on the fixture with the code that made it (page ids, in rank order)
BEFORE = {
    "安全": [1, 4, 3],
    "集成电路": [2],
    "苹": [3, 2],
    "劳动法": [3],
    "湖北": [4],
    "国": [3, 2, 4, 1],
    "Minecraft": [5],
    "gun laws": [6],
    "the": [7, 6, 5, 1],
    "journalism*": [7],
    '"open journalism"': [7],
    "中国 Apple": [],
    "ZoomEye": [1],
}


def test_an_archive_of_schema_8_migrates_in_place_smaller_with_the_same_results(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "mirror.db")
    old = sqlite3.connect(folder / "mirror.db")
    markdown = dict(old.execute("select url, markdown from pages where markdown is not null"))
    old.close()
    size = (folder / "mirror.db").stat().st_size
    with Archive(folder) as archive:
        db = archive.db
        assert db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
        assert 'content="pages"' in db.execute("select sql from sqlite_master where name = 'pages_fts'").fetchone()[0].replace(" ", "")
        assert "markdown" not in {c.name for c in db["pages"].columns}
        assert {
            row["url"]: with_markdown(row)["markdown"] for row in db.query("select url, markdown_z from pages where markdown_z is not null")
        } == markdown
        assert {query: [hit.id for hit in search(db, query, limit=10)] for query in BEFORE} == BEFORE
        assert_index_matches_pages(db)
        hit = search(db, "劳动法")[0]
        assert "\x02劳动法\x03" in hit.snippet  # snippets come from the page's own text
        english = search(db, "gun laws")[0]
        assert "\x02gun\x03" in english.snippet and "\x02laws\x03" in english.snippet
    archive_db = folder / "mirror.db"
    sqlite3.connect(archive_db).execute("pragma wal_checkpoint(truncate)").close()
    assert archive_db.stat().st_size < 0.75 * size


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


def test_link_health_reads_the_pages_from_an_index_not_their_rows(tmp_path):
    """The reading home's health panel at 100,000 links went past datasette's one second reading
    each linked page's row (its text overflows onto pages of its own); an index holds what it reads."""
    from mirror.check.link_health import HEALTH_INDEX

    with Archive(tmp_path / "archive") as archive:
        plan = " ".join(row[-1] for row in archive.db.execute("explain query plan select * from link_health"))
    assert f"COVERING INDEX {HEALTH_INDEX}" in plan, plan


def test_a_view_of_the_users_naming_the_markdown_does_not_stop_the_migration(tmp_path, cli):
    folder = tmp_path / "archive"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "mirror.db")
    conn = sqlite3.connect(folder / "mirror.db")
    conn.execute("create view my_notes as select url, markdown from pages")
    conn.commit()
    conn.close()
    (tmp_path / "s.md").write_text("- https://example.com/new\n", encoding="utf-8")
    assert cli("links", "s.md").exit_code == 0
    conn = sqlite3.connect(folder / "mirror.db")
    assert conn.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("select count(*) from my_notes where markdown is not null").fetchone()[0] == 0
    with Archive(folder) as archive:
        assert all(with_markdown(row)["markdown"] for row in archive.db.query("select markdown_z from pages where status = 'archived'"))
