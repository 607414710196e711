"""`mirror forget LIST` (issue 42 item 11): a reading list removed from the archive, after a yes;
the pages no other list links leave the reading home, link health, `check` and search; the
pages another list links stay; the WARC files are not touched. Servers on 127.0.0.x, a real
datasette in-process."""

from __future__ import annotations

import asyncio
import json

import sqlite_utils
from datasette.app import Datasette

from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def db_of(tmp_path) -> sqlite_utils.Database:
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db")


def two_lists(cli, tmp_path, web) -> dict[str, str]:
    urls = {
        "mine": web.add("/mine", article("我的文章", "只在我的列表里：斑马。")),
        "theirs": web.add("/theirs", article("别人的文章", "只在别人的列表里：长颈鹿。")),
        "shared": web.add("/shared", article("共同的文章", "两个列表都有：河马。")),
        "dead": web.url("/dead-link"),
    }
    (tmp_path / "mine.md").write_text(f"# 我的\n- {urls['mine']}\n- {urls['shared']}\n", encoding="utf-8")
    (tmp_path / "theirs.md").write_text(f"- {urls['theirs']}\n- {urls['shared']}\n- {urls['dead']}\n", encoding="utf-8")
    assert cli("fetch", "mine.md", "theirs.md", *QUICK).exit_code == 0
    return urls


def test_forget_removes_a_list_and_the_pages_only_it_links(cli, tmp_path, web):
    urls = two_lists(cli, tmp_path, web)
    warcs = {p.name: p.read_bytes() for p in (tmp_path / "archive" / "warc").iterdir()}
    result = cli("forget", "theirs.md", "--yes")
    assert result.exit_code == 0, result.output
    assert "2 pages no other list links" in result.stderr and "1 page other lists link too stay" in result.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "archive" / "warc").iterdir()} == warcs  # the captures stay
    db = db_of(tmp_path)
    assert {row["url"] for row in db["pages"].rows} == {urls["mine"], urls["shared"]}
    assert {row["seed"] for row in db["links"].rows} == {"mine.md"} and [r["seed"] for r in db["seeds"].rows] == ["mine.md"]
    for table, column in (("attempts", "url"), ("versions", "page_url"), ("resources", "page_url")):
        assert not db.execute(f"select 1 from {table} where {column} in (?, ?)", [urls["theirs"], urls["dead"]]).fetchone(), table
    assert json.loads(db["pages"].get(urls["shared"])["seeds"]) == ["mine.md"]
    assert [(r["reading_list"], r["health"]) for r in db.query("select * from link_health")] == [("mine.md", "alive")]
    assert json.loads(cli("search", "长颈鹿", "--json").stdout) == []
    assert [h["url"] for h in json.loads(cli("search", "河马", "--json").stdout)] == [urls["shared"]]
    assert json.loads(cli("check", "--older-than", "0", *QUICK, "--json").stdout)["checked"] == 2
    home = asyncio.run(Datasette([str(tmp_path / "archive" / "mirror.db")]).client.get("/")).text
    assert "theirs.md" not in home and "别人的文章" not in home and "我的文章" in home
    assert "theirs.md itself is still there" in result.stderr


def answering(answer: str | None, *args: str):
    """`mirror forget ...` with `answer` on its standard input (None: nothing, at its end at once)."""
    from typer.testing import CliRunner

    from mirror.cli import app

    return CliRunner().invoke(app, ["forget", *args], input=answer, catch_exceptions=False)


def test_forget_asks_first(cli, tmp_path, web):
    two_lists(cli, tmp_path, web)
    said_no = answering("n\n", "theirs.md")
    assert said_no.exit_code == 1 and "not forgotten" in said_no.stderr
    no_answer = answering(None, "theirs.md")  # (no terminal, nothing on the standard input: a no)
    assert no_answer.exit_code == 1 and "--yes" in no_answer.stderr
    assert db_of(tmp_path)["seeds"].count == 2
    said_yes = answering("y\n", "theirs.md")
    assert said_yes.exit_code == 0 and "Forget it?" in said_yes.stderr, said_yes.output
    assert [r["seed"] for r in db_of(tmp_path)["seeds"].rows] == ["mine.md"]


def test_an_unknown_list_is_an_error(cli, tmp_path, web):
    two_lists(cli, tmp_path, web)
    result = cli("forget", "nobodys.md", "--yes")
    assert result.exit_code == 2 and "no reading list 'nobodys.md'" in result.stderr and "mine.md" in result.stderr


def test_a_forgotten_original_hands_its_duplicate_on(cli, tmp_path, web):
    """The article a forgotten list linked was the original of a link in another list (a short
    link to it): that page becomes the article, in the index and on the home page."""
    target = web.add("/article", article("原文", "独一无二的词：蜂鸟。"))
    short = web.add("/s/1", b"", status=301, Location="/article")
    (tmp_path / "first.md").write_text(f"- {target}\n", encoding="utf-8")
    (tmp_path / "second.md").write_text(f"- {short}\n", encoding="utf-8")
    assert cli("fetch", "first.md", *QUICK).exit_code == 0
    assert cli("fetch", "second.md", *QUICK).exit_code == 0
    assert db_of(tmp_path)["pages"].get(short)["status"] == "duplicate"
    assert cli("forget", "first.md", "--yes").exit_code == 0
    row = db_of(tmp_path)["pages"].get(short)
    assert (row["status"], row["same_as"]) == ("archived", None)
    assert [h["url"] for h in json.loads(cli("search", "蜂鸟", "--json").stdout)] == [short]
