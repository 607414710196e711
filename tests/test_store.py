"""Recording the inventory in archive/mirror.db: schema, idempotence, removal."""

from __future__ import annotations

import json
import random
import shutil
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
