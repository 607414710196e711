"""`mirror check`'s report (issue 42 item 5): its progress is labelled `check` and ends on the
counts its summary gives, a small edit reads as a small change (never `0%`), a link that came
back says so, and the reading home's link health counts what the `link_health` table counts.
Servers on 127.0.0.x, a real datasette in-process."""

from __future__ import annotations

import asyncio
import json
import re

import sqlite_utils
from datasette.app import Datasette

from .webserver import article

CHECK = ("--delay", "0", "--retries", "0", "--timeout", "5")
QUICK = (*CHECK, "--workers", "1")
SENTENCES = [f"第{n}句话讲的是分块注意力的一个细节，编号{n}，内容各不相同，用来组成一篇足够长的文章。" for n in range(60)]


def db_of(tmp_path) -> sqlite_utils.Database:
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db")


def long_article(sentences: list[str]) -> bytes:
    return article("一篇长文章", "".join(sentences))


def test_the_check_bar_is_labelled_check_and_ends_on_the_summarys_counts(cli, tmp_path, web):
    same = web.add("/same", article("不变", "不变的文章正文。"))
    changes = web.add("/changes", article("会变", "第一版的正文。"))
    (tmp_path / "list.md").write_text(f"- {same}\n- {changes}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    web.add("/changes", article("会变", "第二版改写了整句话，内容已经完全不同。"))
    piped = cli("check", "--older-than", "0", *CHECK)
    assert piped.exit_code == 0 and "checking 2 pages" in piped.stderr and "fetching" not in piped.stderr, piped.stderr
    assert "checked 2 pages: 1 unchanged, 1 changed" in piped.stderr
    terminal = cli("check", "--older-than", "0", *CHECK, env={"TTY_COMPATIBLE": "1", "COLUMNS": "160"})
    assert terminal.exit_code == 0, terminal.output
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.stderr)
    bars = [line for line in re.split(r"[\r\n]", plain) if line.lstrip().startswith("check ")]
    assert bars and "2/2" in bars[-1] and "unchanged 2" in bars[-1], plain
    assert "checked 2 pages: 2 unchanged" in plain


def test_an_edit_of_two_sentences_is_a_change_of_more_than_nothing(cli, tmp_path, web):
    url = web.add("/long", long_article(SENTENCES))
    assert cli("fetch", url, *QUICK).exit_code == 0
    edited = list(SENTENCES)
    edited[10] = "这一句被作者改写了。"
    edited[40] = "这一句也改了。"
    web.add("/long", long_article(edited))
    result = cli("check", "--older-than", "0", *CHECK)
    assert result.exit_code == 0, result.output
    share = re.search(r"changed \(([^)]*) of the text\)", result.stderr)
    assert share and share[1] not in ("0%", "0.0%"), result.stderr
    [version] = db_of(tmp_path).query("select changed from versions where state = 'changed'")
    assert 0 < version["changed"] < 0.2


def test_a_link_that_came_back_is_reported_as_back(cli, tmp_path, web):
    url = web.add("/returns", article("回来了", "这篇文章消失过一阵。"))
    assert cli("fetch", url, *QUICK).exit_code == 0
    web.recorder.gone.add("/returns")
    assert "1 gone" in cli("check", "--older-than", "0", *CHECK).stderr
    web.recorder.gone.discard("/returns")
    result = cli("check", "--older-than", "0", *CHECK)
    assert result.exit_code == 0
    assert "checked 1 page: 1 unchanged; back: 1" in result.stderr, result.stderr
    assert f"back (was gone), unchanged  {url}" in result.stderr
    report = json.loads(cli("check", "--older-than", "0", *CHECK, "--json").stdout)
    assert report["back"] == 0 and report["pages"] == []  # back once: unchanged since


def test_the_homes_link_health_counts_what_the_table_counts(cli, tmp_path, web):
    """A list with a page fetched once (`first`) and one checked since (`same`): two pages alive,
    in one row of the view, and the reading home says 2 alive."""
    one, two = web.add("/one", article("一", "第一篇。")), web.add("/two", article("二", "第二篇。"))
    (tmp_path / "list.md").write_text(f"- {one}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    assert cli("check", "--older-than", "0", *CHECK).exit_code == 0
    (tmp_path / "list.md").write_text(f"- {one}\n- {two}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    assert {r["health"] for r in db_of(tmp_path)["pages"].rows} == {"first", "same"}
    ds = Datasette([str(tmp_path / "archive" / "mirror.db")])
    rows = asyncio.run(ds.client.get("/mirror/link_health.json?_shape=array")).json()
    assert [(r["reading_list"], r["health"], r["links"]) for r in rows] == [("list.md", "alive", 2)]
    home = asyncio.run(ds.client.get("/")).text
    panel = home[home.index('id="link-health"') :]
    assert re.search(r"2\s+alive", panel[: panel.index("</table>")]), panel[:2000]


def test_the_first_render_of_a_page_saved_over_http_is_no_change(cli, tmp_path, web):
    """A page a script fills, saved by a run without the browser, then checked with one: its
    render is a better reading of the same page (its shell's text unchanged), `same` and not
    `changed`, and its article is the render's from then on; the home says no page changed."""
    from .browsersite import app_page, serve_app
    from .helpers import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    url = serve_app(web, "app", "Rendered by JavaScript")
    (tmp_path / "list.md").write_text(f"- {url}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK, "--browser", "never").exit_code == 0
    web.add("/app", app_page("/api/app.json").replace(b"<head>", b"<head><!-- build 2 -->"))  # new bytes, same shell
    result = cli("check", "--older-than", "0", *CHECK, "--timeout", "15", "--browser", "auto", "--chromium", CHROMIUM)
    assert result.exit_code == 0 and "checked 1 page: 1 unchanged" in result.stderr, result.stderr
    page = db_of(tmp_path)["pages"].get(url)
    assert (page["status"], page["capture"], page["health"]) == ("archived", "browser", "same")
    assert [v["state"] for v in db_of(tmp_path).query("select state from versions order by id")] == ["first", "same"]
    home = asyncio.run(Datasette([str(tmp_path / "archive" / "mirror.db")]).client.get("/")).text
    assert "changed" not in home[home.index('id="link-health"') :].split("</table>")[0]
