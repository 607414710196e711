"""The inventory's bulk inserts on a second thread: the same rows as row-by-row inserts, errors
raised in the caller's thread, no thread left behind, the archive as before a failed run."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from mirror.seeds import read_seeds
from mirror.store import Archive, _bulk
from mirror.store._bulk import BulkWriter

from .conftest import SEEDS

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
            (l.seed, l.line, l.col, l.url, l.url_as_written, l.title, l.section, l.tags, l.added) for l in inventory.links
        ]
        assert archive.conn.execute("select title from links where url = 'https://nul.example/'").fetchone() == ("控制\x00字符",)
        pages = archive.conn.execute("select id, url, seeds, sections from pages order by id").fetchall()
        assert [url for _, url, _, _ in pages] == list(inventory.pages)
        assert pages[0] == (1, "https://example.com/p/0", '["list.md"]', '["节 0","节 2"]')
        assert pages[-2][3] == '["节 2"]'
        second = archive.record_inventory(read_seeds([seed], base=tmp_path))
        assert (first.new_pages, second.new_pages, second.removed_links) == (12_001, 0, 0)
        assert archive.conn.execute("select rowid, * from links order by rowid").fetchall() == links
