"""Recording the inventory in archive/mirror.db: schema, idempotence, removal."""

from __future__ import annotations

import json
import sqlite3

import pytest
import sqlite_utils

from mirror.seeds import read_seeds
from mirror.store import Archive, ArchiveError

from .conftest import SEEDS


def rows(db_path, sql):
    conn = sqlite3.connect(db_path)  # a plain sqlite3 client reads every table
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


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
