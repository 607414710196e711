"""The archive database: the inventory recorded once, pages and links kept exact, schema
migrations, bulk writes, and readers never locked out while a fetch writes."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils

from mirror.search import search
from mirror.seeds import read_seeds
from mirror.store import Archive, ArchiveError, _bulk
from mirror.store._bulk import BulkWriter
from mirror.store.queries import with_markdown
from mirror.store.schema import SCHEMA_VERSION

from .fts_check import assert_index_matches_pages
from .helpers import SEEDS, run_mirror, seed_folder
from .webserver import HostileServer


def rows(db_path, sql):
    conn = sqlite3.connect(db_path)  # a plain sqlite3 client reads every table
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# What `seeds` and `sections` of every page must be: recounted from all its links rows.
RECOUNT = """update pages set
    seeds = (select json_group_array(distinct seed) from links where links.url = pages.url),
    sections = (select json_group_array(distinct section) from links where links.url = pages.url and section is not null)"""


def _facets(archive):
    return archive.conn.execute("select url, seeds, sections from pages order by url").fetchall()


def _edit(folder, rnd):
    """Delete, insert, repeat and re-section lines of every seed, as a person editing notes would."""
    for path in sorted(folder.iterdir()):
        lines = path.read_text(encoding="utf-8").splitlines()
        for _ in range(6):
            i = rnd.randrange(len(lines) + 1)
            op = rnd.randrange(4)
            if op == 0 and lines:
                del lines[min(i, len(lines) - 1)]
            elif op == 1:
                lines.insert(i, f"https://new.example/{rnd.randrange(40)}")
            elif op == 2 and lines:
                lines.insert(i, lines[rnd.randrange(len(lines))])
            else:
                lines.insert(i, f"## 节 {rnd.randrange(3)}")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


ROWS = [
    (1, "https://a.example/", '标题 "引号" \\ 反斜杠', None),
    (2, "https://b.example/\u2028", "控制\x07字符\x1f\x7f", "😀"),
    (3, "https://c.example/", "a\x00NUL inside", ""),  # SQLite's JSON strings would end at the NUL
    (2**62, "x" * 5000, None, "é"),
    *((i, f"https://d.example/{i}", f"第 {i} 篇", None if i % 3 else "节") for i in range(4, 60)),
]


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mirror-bulk-insert"]


@pytest.fixture
def conn(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.db", check_same_thread=False, isolation_level=None)
    for table in ("bulk", "plain"):
        conn.execute(f"create table {table} (n integer, url text, title text, note text, fixed text, stamp text)")
    yield conn
    conn.close()


FIXTURE = Path(__file__).parent / "fixtures" / "archive-schema8.db"


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


def test_inventory_is_recorded_once(tmp_path):
    inventory = read_seeds([SEEDS], base=SEEDS.parent)
    with Archive(tmp_path / "archive") as archive:
        first = archive.record_inventory(inventory)
        second = archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
    db = tmp_path / "archive" / "mirror.db"
    assert first.new_pages == first.pages == len(inventory.pages)
    assert second.new_pages == 0 and second.removed_links == 0
    assert rows(db, "select count(*) from links") == [(len(inventory.links),)]
    assert rows(db, "select count(*) from pages") == [(len(inventory.pages),)]
    assert rows(db, "select count(*) from (select seed, line, col from links group by 1, 2, 3 having count(*) > 1)") == [(0,)]
    assert rows(db, "select status, count(*) from pages group by 1 order by 1") == [
        ("pending", len(inventory.pages) - 1),
        ("skipped", 1),
    ]
    (skipped,) = rows(db, "select url, error, error_message from pages where status = 'skipped'")
    assert skipped[0] == "/images/img5/Mixtral.png" and skipped[1] == "relative"
    assert "relative" in skipped[2]
    assert rows(db, "pragma journal_mode") == [("wal",)]


def test_candidates_are_stored_on_the_page(tmp_path):
    with Archive(tmp_path) as archive:
        archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
    db = sqlite_utils.Database(tmp_path / "mirror.db")
    page = db["pages"].get("https://github.com/openai/tritonPython")
    assert page["status"] == "pending"
    assert page["candidates"].startswith('["https://github.com/openai/triton"')


def test_removed_link_keeps_its_page(tmp_path):
    seed = tmp_path / "list.md"
    seed.write_text("# A\n[one](https://a.example/1)\n[two](https://a.example/2)\n", encoding="utf-8")
    archive_dir = tmp_path / "archive"
    with Archive(archive_dir) as archive:
        archive.record_inventory(read_seeds([seed], base=tmp_path))
        seed.write_text("# A\n[one](https://a.example/1)\n", encoding="utf-8")
        stats = archive.record_inventory(read_seeds([seed], base=tmp_path))
    db = archive_dir / "mirror.db"
    assert stats.removed_links == 1
    assert rows(db, "select url from links") == [("https://a.example/1",)]
    assert rows(db, "select url from pages order by url") == [("https://a.example/1",), ("https://a.example/2",)]


def test_existing_page_status_is_not_reset(tmp_path):
    seed = tmp_path / "s.txt"
    seed.write_text("https://a.example/1\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(read_seeds([seed], base=tmp_path))
        archive.db["pages"].update("https://a.example/1", {"status": "archived"})
        archive.record_inventory(read_seeds([seed], base=tmp_path))
        assert dict(archive.db.execute("select url, status from pages").fetchall()) == {"https://a.example/1": "archived"}


def test_archive_path_that_is_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ArchiveError, match="not a folder"):
        Archive(blocker)


def test_corrupt_database_is_a_clear_error(tmp_path):
    (tmp_path / "mirror.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ArchiveError, match="cannot open database"):
        Archive(tmp_path)


def test_pages_carry_ids_hosts_and_where_they_were_linked(tmp_path):
    with Archive(tmp_path) as archive:
        archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
        ids = [r["id"] for r in archive.db.query("select id from pages order by id")]
        assert ids == list(range(1, len(ids) + 1))
        again = read_seeds([SEEDS], base=SEEDS.parent)
        archive.record_inventory(again)
        assert [r["id"] for r in archive.db.query("select id from pages order by id")] == ids
        page = archive.db["pages"].get("https://zhuanlan.zhihu.com/p/622212228")  # in seeds 000 and 001
    assert page["host"] == "zhuanlan.zhihu.com"
    assert sorted(json.loads(page["seeds"])) == ["seeds/000_26c02b02fc5889ea.txt", "seeds/001_c87ee9bc1dd6a88b.txt"]
    assert set(json.loads(page["sections"])) == {"Megatron学习", "图解大模型训练系列"}


def test_only_changed_links_are_written_and_pages_keep_exact_seeds_and_sections(tmp_path):
    folder = tmp_path / "seeds"
    shutil.copytree(SEEDS, folder)
    (folder / "extra.md").write_text(
        '# 一\n[a](https://a.example/1)\n\n## 二\n[again](https://a.example/1) https://b.example/x\n控制\x07字符 "引号" https://c.example/\n',
        encoding="utf-8",
    )
    rnd = random.Random(5)
    with Archive(tmp_path / "archive") as archive:
        for _ in range(5):
            archive.record_inventory(read_seeds([folder], base=tmp_path))
            recorded = _facets(archive)
            with archive.conn:
                archive.conn.execute(RECOUNT)
            assert _facets(archive) == recorded
            _edit(folder, rnd)
        archive.record_inventory(read_seeds([folder], base=tmp_path))
        links = archive.conn.execute("select rowid, * from links order by rowid").fetchall()
        changes = archive.conn.total_changes
        archive.record_inventory(read_seeds([folder], base=tmp_path))
        assert archive.conn.total_changes - changes == len(list(folder.iterdir()))  # each seed's read_at, nothing else
        assert archive.conn.execute("select rowid, * from links order by rowid").fetchall() == links


def test_pages_of_an_archive_older_than_seeds_and_sections_get_them(tmp_path):
    with Archive(tmp_path) as archive:
        archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
        recorded = _facets(archive)
        with archive.conn:
            archive.conn.execute("update pages set seeds = null, sections = null")
        archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
        assert _facets(archive) == recorded


def test_a_large_inventory_leaves_the_same_indexes(tmp_path):
    seed = tmp_path / "big.txt"
    seed.write_text("\n".join(f"https://example.com/p/{i}?utm_source=x" for i in range(12_000)), encoding="utf-8")
    with Archive(tmp_path / "archive") as archive:
        indexes = "select name, sql from sqlite_master where type = 'index' order by name"
        before = archive.conn.execute(indexes).fetchall()
        stats = archive.record_inventory(read_seeds([seed], base=tmp_path))
        assert stats.new_pages == 12_000
        assert archive.conn.execute(indexes).fetchall() == before
        assert archive.conn.execute("pragma integrity_check").fetchall() == [("ok",)]
        assert archive.conn.execute("select count(*) from links where url = 'https://example.com/p/11999'").fetchone() == (1,)
        assert archive.conn.execute("select min(id), max(id), count(distinct id) from pages").fetchone() == (1, 12_000, 12_000)


def test_an_archive_of_the_first_schema_loses_the_redundant_status_index(tmp_path):
    from mirror.store.schema import SCHEMA_VERSION

    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(read_seeds([SEEDS]))
    db = tmp_path / "archive" / "mirror.db"
    with sqlite3.connect(db) as conn:  # as the first schema left it
        conn.execute('create index "idx_pages_status" on "pages" ("status")')
        conn.execute("pragma user_version = 1")
    conn.close()
    with Archive(tmp_path / "archive"):
        pass
    conn = sqlite3.connect(db)
    indexes = {row[0] for row in conn.execute("select name from sqlite_master where type = 'index'")}
    assert "idx_pages_status" not in indexes and "idx_pages_status_fetched_at" in indexes
    assert conn.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
    plan = " ".join(row[3] for row in conn.execute("explain query plan select url from pages where status = 'pending'"))
    assert "idx_pages_status_fetched_at" in plan  # the status queries still use an index
    assert "extract_note" in {row[1] for row in conn.execute("pragma table_info(pages)")}  # version 3's column
    conn.close()


@pytest.mark.parametrize("item", ["value ->> {}", "json_extract(value, '$[{}]')"])  # SQLite 3.38+, and older
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_bulk_rows_are_the_rows_executemany_writes(conn, monkeypatch, chunk, item):
    monkeypatch.setattr(_bulk, "_CHUNK", chunk)  # chunk boundaries everywhere, NUL rows among JSON ones
    monkeypatch.setattr(_bulk, "_ITEM", item)
    conn.execute("begin")
    with BulkWriter(conn) as bulk:
        bulk.insert("insert", "bulk", ("n", "url", "title", "note"), iter(ROWS), {"fixed": "seed.md", "stamp": None})
    conn.executemany("insert into plain values (?, ?, ?, ?, 'seed.md', null)", ROWS)
    conn.execute("commit")
    typed = "select rowid, n, typeof(n), url, title, typeof(title), note, typeof(note), fixed, stamp from {} order by rowid"
    assert conn.execute(typed.format("bulk")).fetchall() == conn.execute(typed.format("plain")).fetchall()
    assert conn.execute("select title from bulk where n = 3").fetchone() == ("a\x00NUL inside",)
    assert not writer_threads()


def test_an_error_of_the_writer_is_raised_in_the_callers_thread(conn):
    conn.execute("create unique index one_n on bulk (n)")
    conn.execute("begin")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"), BulkWriter(conn) as bulk:
        bulk.insert("insert", "bulk", ("n",), [(1,), (1,)])
        bulk.execute("create index later on bulk (url)")  # queued after the error: not run
    conn.execute("rollback")
    assert not writer_threads()
    assert conn.execute("select count(*) from sqlite_master where name = 'later'").fetchone() == (0,)


def test_an_error_in_the_block_stops_the_writer(conn):
    conn.execute("begin")
    with pytest.raises(ZeroDivisionError), BulkWriter(conn) as bulk:
        bulk.insert("insert", "bulk", ("n",), [(i,) for i in range(100)])
        1 / 0  # noqa: B018
    assert not writer_threads()
    conn.execute("rollback")
    assert conn.execute("select count(*) from bulk").fetchone() == (0,)


def test_a_failed_inventory_leaves_the_archive_as_it_was(tmp_path):
    """A real SQLite error half-way through the bulk inserts (a trigger refuses one row)."""
    seed = tmp_path / "big.md"
    seed.write_text("\n".join(f"- 第 {i} 篇 https://example.com/p/{i}" for i in range(30_000)), encoding="utf-8")
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(read_seeds([SEEDS], base=SEEDS.parent))
        dump = list(archive.conn.iterdump())
        archive.conn.execute(
            "create trigger refuse before insert on pages when new.url = 'https://example.com/p/25000' "
            "begin select raise(abort, 'refused by the test'); end"
        )
        with pytest.raises(sqlite3.IntegrityError, match="refused by the test"):
            archive.record_inventory(read_seeds([SEEDS, seed], base=tmp_path))
        assert not writer_threads()
        archive.conn.execute("drop trigger refuse")
        assert list(archive.conn.iterdump()) == dump  # rows, indexes dropped for the bulk insert and all
        stats = archive.record_inventory(read_seeds([SEEDS, seed], base=tmp_path))  # and the next run succeeds
        assert stats.new_pages == 30_000
        assert archive.conn.execute("pragma integrity_check").fetchone() == ("ok",)


def test_a_large_inventory_in_many_chunks_is_recorded_once(tmp_path, monkeypatch):
    monkeypatch.setattr(_bulk, "_CHUNK", 997)
    seed = tmp_path / "list.md"
    lines = [f"## 节 {i // 5000}\n第 {i} 篇\nhttps://example.com/p/{i % 12_000}?utm_source=x\n" for i in range(15_000)]
    seed.write_text("\n".join(lines) + "控制\x00字符 https://nul.example/\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as archive:
        inventory = read_seeds([seed], base=tmp_path)
        first = archive.record_inventory(inventory)
        links = archive.conn.execute("select rowid, * from links order by rowid").fetchall()
        assert [row[1:] for row in links] == [
            (link.seed, link.line, link.col, link.url, link.url_as_written, link.title, link.section, link.tags, link.added)
            for link in inventory.links
        ]
        assert archive.conn.execute("select title from links where url = 'https://nul.example/'").fetchone() == ("控制\x00字符",)
        pages = archive.conn.execute("select id, url, seeds, sections from pages order by id").fetchall()
        assert [url for _, url, _, _ in pages] == list(inventory.pages)
        assert pages[0] == (1, "https://example.com/p/0", '["list.md"]', '["节 0","节 2"]')
        assert pages[-2][3] == '["节 2"]'
        second = archive.record_inventory(read_seeds([seed], base=tmp_path))
        assert (first.new_pages, second.new_pages, second.removed_links) == (12_001, 0, 0)
        assert archive.conn.execute("select rowid, * from links order by rowid").fetchall() == links


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


@pytest.mark.hostile
def test_readers_never_see_database_is_locked(tmp_path):
    from datasette.app import Datasette

    from mirror.search import search

    with HostileServer("127.0.0.1", lifetime=300) as web:
        urls = [web.url(f"/slow/{i}?s=0.05") for i in range(60)]
        seed_folder(tmp_path, urls)
        assert run_mirror("links", cwd=tmp_path).returncode == 0
        fetch = subprocess.Popen(
            [sys.executable, "-m", "mirror", "fetch", "--delay", "0", "--per-host", "4", "--workers", "2"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        db_path = tmp_path / "archive" / "mirror.db"
        ds = Datasette([str(db_path)])
        reads = cli_runs = 0
        deadline = time.monotonic() + 60
        try:
            while fetch.poll() is None and time.monotonic() < deadline:
                response = asyncio.run(ds.client.get("/mirror/pages.json?_shape=array&_search=%E6%98%BE%E5%AD%98"))
                assert response.status_code == 200, response.text
                with sqlite_utils.Database(db_path) as db:
                    search(db, "显存")
                if reads % 10 == 0:
                    cli = run_mirror("search", "显存", "--json", cwd=tmp_path, timeout=60)
                    assert cli.returncode == 0 and "locked" not in cli.stderr, cli.stderr
                    cli_runs += 1
                reads += 1
        finally:
            fetch.wait(timeout=120)
        assert fetch.returncode == 0 and "locked" not in fetch.stderr
        assert reads >= 5 and cli_runs >= 1
        final = asyncio.run(ds.client.get("/mirror/pages.json?_shape=array&_search=%E6%98%BE%E5%AD%98&_size=max")).json()
        assert len(final) == 60
