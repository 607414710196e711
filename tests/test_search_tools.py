"""Issue 44 item 3: the archive searched by the ecosystem's own tools, without mirror.

`sqlite-utils search mirror.db pages WORD`, datasette's `_search` without our plugin, and
datasette-search-all find English words and Chinese words of one and two characters (the index
is an external-content table of `pages`, as they look for it); a longer Chinese word is typed as
its overlapping pairs in quotes (docs/clients.md). Never a silently unfiltered list. And an
archive of the schema before (a contentless index) is brought to this one in place."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mirror.search import search
from mirror.store import Archive
from mirror.store.schema import SCHEMA_VERSION

from .fts_check import assert_index_matches_pages
from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")
# made by the code before issue 44 (schema 10, a contentless index) from tests/fixtures/archive-schema8.db
FIXTURE = Path(__file__).parent / "fixtures" / "archive-schema10.db"
# what search returned on it with the code that made it (page ids, in rank order)
BEFORE = {"安全": [1, 4, 3], "集成电路": [2], "苹": [3, 2], "劳动法": [3], "湖北": [4], "Minecraft": [5], "gun laws": [6], "the": [7, 6, 5, 1]}
SQLITE_UTILS = Path(sys.executable).with_name("sqlite-utils")
TAX = "根据财政部的公告，企业研发费用加计扣除等到期税收优惠政策延续执行至二〇二七年底。"
ENGLISH = "Rotary position embeddings encode relative distance inside the attention product."


@pytest.fixture
def archive(cli, tmp_path, web):
    urls = {
        "tax": web.add("/tax", article("财政政策", TAX)),
        "rope": web.add("/rope", article("Positional encodings", ENGLISH)),
        "other": web.add("/other", article("别的文章", "这一篇只讲流水线并行的气泡。")),
    }
    assert cli("fetch", *urls.values(), *QUICK).exit_code == 0
    return tmp_path / "archive" / "mirror.db", urls


def sqlite_utils_search(db: Path, query: str) -> list[dict]:
    done = subprocess.run([str(SQLITE_UTILS), "search", str(db), "pages", query, "-c", "url"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sqlite_utils_finds_english_and_chinese_words_mid_sentence(archive):
    db, urls = archive
    assert [row["url"] for row in sqlite_utils_search(db, "税收")] == [urls["tax"]]  # mid-sentence: 到期税收优惠
    assert [row["url"] for row in sqlite_utils_search(db, "优惠")] == [urls["tax"]]
    assert [row["url"] for row in sqlite_utils_search(db, "税")] == [urls["tax"]]  # one character
    assert [row["url"] for row in sqlite_utils_search(db, "attention")] == [urls["rope"]]
    assert sqlite_utils_search(db, "没有这个词") == []  # found nowhere: an empty list, never every row
    assert sqlite_utils_search(db, "税收优") == []  # three characters: not a token these tools can find ...
    assert [row["url"] for row in sqlite_utils_search(db, '"税收 收优"')] == [urls["tax"]]  # ... as its pairs in quotes they can
    # the one-line SQL of docs/clients.md
    conn = sqlite3.connect(db)
    sql = "select url from pages where rowid in (select rowid from pages_fts where pages_fts match ?)"
    assert [row[0] for row in conn.execute(sql, ['"税收 收优 优惠"'])] == [urls["tax"]]


async def _plain_datasette(db: Path, paths: list[str]) -> list[dict]:
    """Datasette with our plugin unregistered (datasette's documented way for tests), the
    datasette-search-all plugin as installed."""
    from datasette.app import Datasette
    from datasette.plugins import pm

    ours = pm.unregister(name="mirror")
    try:
        datasette = Datasette([str(db)])
        answers = []
        for path in paths:
            response = await datasette.client.get(path)
            assert response.status_code == 200, (path, response.text[:500])
            answers.append(response.json() if ".json" in path else {"html": response.text})
        return answers
    finally:
        pm.register(ours, name="mirror")


def test_plain_datasette_and_search_all_filter_by_the_search(archive):
    pytest.importorskip("datasette_search_all", reason="the test extras install datasette-search-all")
    db, urls = archive
    tax, english, nothing, search_all = asyncio.run(
        _plain_datasette(
            db,
            [
                "/mirror/pages.json?_search=税收&_shape=objects&_col=url",
                "/mirror/pages.json?_search=attention&_shape=objects&_col=url",
                "/mirror/pages.json?_search=没有这个词&_shape=objects&_col=url",
                "/-/search?q=税收",
            ],
        )
    )
    assert [row["url"] for row in tax["rows"]] == [urls["tax"]]
    assert [row["url"] for row in english["rows"]] == [urls["rope"]]
    assert nothing["rows"] == []  # never the whole table
    # datasette-search-all lists the table as searchable, and asks its JSON as above
    assert 'data-searchable-url="/mirror/pages"' in search_all["html"]


def test_an_archive_of_schema_10_migrates_with_the_same_results_and_the_tools_search_it(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "mirror.db")
    with Archive(folder) as archive:
        db = archive.db
        assert db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
        assert {query: [hit.id for hit in search(db, query, limit=10)] for query in BEFORE} == BEFORE
        assert_index_matches_pages(db)
        assert "title" in {column.name for column in db["seeds"].columns}
    urls = dict(sqlite3.connect(folder / "mirror.db").execute("select id, url from pages"))
    assert [row["url"] for row in sqlite_utils_search(folder / "mirror.db", "湖北")] == [urls[4]]
    assert [row["url"] for row in sqlite_utils_search(folder / "mirror.db", "Minecraft")] == [urls[5]]


def test_page_rowids_apart_from_their_ids_are_brought_together_by_the_migration(cli, tmp_path, web):
    url = web.add("/tax", article("财政政策", TAX))
    assert cli("fetch", url, *QUICK).exit_code == 0
    db = tmp_path / "archive" / "mirror.db"
    _as_schema_10(db)
    with Archive(tmp_path / "archive") as migrated:
        assert migrated.db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
        sql = migrated.db.execute("select sql from sqlite_master where name = 'pages_fts'").fetchone()[0]
        assert 'content="pages"' in sql
        assert migrated.db.execute("select count(*) from pages where rowid != id").fetchone()[0] == 0
        assert_index_matches_pages(migrated.db)
        assert [hit.url for hit in search(migrated.db, "税收优惠")] == [url]  # mirror's own exact search, as before
    assert [row["url"] for row in sqlite_utils_search(db, "税收")] == [url]


def _as_schema_10(db: Path) -> None:
    """The archive as the code before issue 44 left it: the contentless index, seeds without a
    title, page rowids that are not their ids, user_version 10."""
    from mirror._fts import FTS_COLUMNS, INDEX_COLUMNS
    from mirror._util.segment import index_values

    conn = sqlite3.connect(db)
    with conn:
        conn.execute("drop table pages_fts")
        conn.execute(f"create virtual table pages_fts using fts5({', '.join(INDEX_COLUMNS)}, content='', tokenize = 'unicode61 remove_diacritics 2')")
        for page_id, *values in conn.execute(f"select id, {', '.join(FTS_COLUMNS)} from pages where status = 'archived'").fetchall():
            conn.execute(f"insert into pages_fts (rowid, {', '.join(INDEX_COLUMNS)}) values (?, ?, ?, ?, ?, ?, ?)", [page_id, *index_values(*values)])
        conn.execute("update pages set rowid = rowid + 1000")  # rowids apart from ids, as an older archive may have them
        conn.execute("alter table seeds drop column title")
        conn.execute("pragma user_version = 10")
    conn.close()
    shutil.rmtree(db.parent / "mirror.db-shm", ignore_errors=True)
