"""`mirror check`: versions of a page kept as it changes, soft 404s, pages gone, login walls,
dead hosts, and the link health the reading home shows."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

from mirror.store import Archive
from mirror.warc import WarcLocation, read_payload

from .helpers import run_mirror
from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


LONG_PAGE = ("流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。" * 12).encode()


def db_of(tmp_path: Path) -> sqlite_utils.Database:
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db")


def versions(tmp_path: Path, url: str) -> list[dict]:
    return list(db_of(tmp_path).query("select * from versions where page_url = ? order by id", [url]))


def body_of(tmp_path: Path, row: dict) -> bytes:
    return read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))[1]


def warc_record(tmp_path: Path, row: dict):
    with open(tmp_path / "archive" / "warc" / row["warc_file"], "rb") as file:
        file.seek(row["warc_offset"])
        record = next(iter(ArchiveIterator(io.BytesIO(file.read(row["warc_length"])))))
        record.content_stream().read()
        return record


def check(cli, *args: str) -> dict:
    result = cli("check", "--older-than", "0", *QUICK, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fetched(cli, web, path: str, body: bytes, **headers: str) -> str:
    url = web.add(path, body, **headers)
    result = cli("fetch", url, *QUICK)
    assert result.exit_code == 0, result.output
    return url


def test_a_changed_page_is_a_new_version_and_the_old_one_stays_byte_identical(cli, tmp_path, web):
    first_body = article("会变的文章", "第一版的内容。")
    url = fetched(cli, web, "/changes", first_body)
    web.add("/changes", article("会变的文章", "第二版改写了这一句，还加了不少新的说明文字。"))
    report = check(cli)
    assert report["states"] == {"changed": 1}
    first, second = versions(tmp_path, url)
    assert (first["state"], second["state"]) == ("first", "changed")
    assert 0 < second["changed"] < 1 and first["text_hash"] != second["text_hash"]
    assert body_of(tmp_path, first) == first_body  # the earlier version, as captured
    page = db_of(tmp_path)["pages"].get(url)
    assert "第二版" in page["text"] and page["health"] == "changed"
    assert (page["warc_file"], page["warc_offset"]) == (second["warc_file"], second["warc_offset"])


def test_an_unchanged_page_keeps_its_saved_copy(cli, tmp_path, web):
    url = fetched(cli, web, "/same", article("不变的文章"))
    before = db_of(tmp_path)["pages"].get(url)
    report = check(cli)
    assert report["states"] == {"same": 1} and report["pages"] == []
    page = db_of(tmp_path)["pages"].get(url)
    assert (page["warc_file"], page["warc_offset"], page["fetched_at"]) == (before["warc_file"], before["warc_offset"], before["fetched_at"])
    assert page["checked_at"] >= before["checked_at"] and page["health"] == "same"
    first, same = versions(tmp_path, url)  # the same bytes again: a revisit record, no second body
    assert same["revisit_of"] == first["id"] and same["warc_length"] < 1000
    record = warc_record(tmp_path, same)
    assert record.rec_type == "revisit" and record.rec_headers.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
    original = warc_record(tmp_path, first)
    assert record.rec_headers.get_header("WARC-Refers-To") == original.rec_headers.get_header("WARC-Record-ID")
    assert record.rec_headers.get_header("WARC-Payload-Digest") == original.rec_headers.get_header("WARC-Payload-Digest")
    etag = web.url("/etag")  # with an ETag: a conditional request, answered 304
    assert cli("fetch", etag, *QUICK).exit_code == 0
    check(cli)
    assert [v["state"] for v in versions(tmp_path, etag)] == ["first", "same"]
    assert web.recorder.headers["/etag"][-1]["If-None-Match"] == '"v1"'


def test_a_deleted_page_is_gone_stays_searchable_and_is_marked(cli, tmp_path, web):
    url = fetched(cli, web, "/deleted", article("被删除的文章", "独一无二的词语：蓝鲸计划。"))
    web.recorder.gone.add("/deleted")
    report = check(cli)
    assert report["states"] == {"gone": 1} and report["pages"][0]["url"] == url
    page = db_of(tmp_path)["pages"].get(url)
    assert page["status"] == "archived" and "蓝鲸计划" in page["text"] and page["health"] == "gone"
    hits = json.loads(cli("search", "蓝鲸", "--json").stdout)
    assert [(h["url"], h["health"]) for h in hits] == [(url, "gone")]
    assert "gone" in cli("search", "蓝鲸").output


@pytest.mark.parametrize(
    "kind, answer",
    [
        (
            "zhihu",
            (
                200,
                "<html><head><title>知乎</title></head><body><div>你似乎来到了没有知识存在的荒原</div>"
                "<a href='/'>去往首页</a></body></html>".encode(),
            ),
        ),
        ("wechat deleted", (200, "<html><body><div id=js_content><p>该内容已被发布者删除</p></div></body></html>".encode())),
        ("wechat violation", (200, "<html><body><p>此内容因违规无法查看</p></body></html>".encode())),
        ("cnblogs", (200, "<html><head><title>博客园</title></head><body><p>抱歉！您访问的博文不存在或已被删除</p></body></html>".encode())),
        (
            "not found in a 200",
            (
                200,
                b"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
                b"<p>The requested URL was not found on this server.</p></body></html>",
            ),
        ),
        (
            "parked",
            (
                200,
                b"<html><head><title>example.test</title></head><body><h1>This domain may be for sale</h1>"
                b"<p>Buy this domain today.</p></body></html>",
            ),
        ),
    ],
)
def test_soft_404s_keep_the_good_copy(cli, tmp_path, web, kind, answer):
    good = article("好好的文章", "这是被存下来的正文。")
    url = fetched(cli, web, "/soft", good)
    web.add("/soft", answer[1], status=answer[0])
    report = check(cli)
    assert report["states"] == {"soft_404": 1}, kind
    last = versions(tmp_path, url)[-1]
    assert last["state"] == "soft_404" and last["note"] and body_of(tmp_path, last) == answer[1]
    page = db_of(tmp_path)["pages"].get(url)
    assert page["status"] == "archived" and "被存下来的正文" in page["text"] and page["health"] == "soft_404"
    assert body_of(tmp_path, versions(tmp_path, url)[0]) == good


def test_a_redirect_to_the_front_page_is_a_soft_404_and_a_move_keeps_the_article(cli, tmp_path, web):
    web.add("/", article("首页", "这里是网站的首页，列出了很多文章。" * 5))
    home = fetched(cli, web, "/post/1", article("搬家的文章", "原来的地址。"))
    web.add("/post/1", b"", status=301, Location="/")
    moved = fetched(cli, web, "/post/2", article("搬走的文章", "这篇文章换了地址，内容不变。"))
    web.add("/new/2", article("搬走的文章", "这篇文章换了地址，内容不变。"))
    web.add("/post/2", b"", status=301, Location="/new/2")
    check(cli)
    assert versions(tmp_path, home)[-1]["state"] == "soft_404"
    last = versions(tmp_path, moved)[-1]
    assert last["state"] == "moved" and last["final_url"].endswith("/new/2")


def test_a_host_that_answers_every_path_is_caught_by_the_probe(cli, tmp_path, web):
    url = fetched(cli, web, "/real", article("真实的文章", "正文在这里。"))
    generic = b"<html><head><title>Welcome</title></head><body><article><p>" + LONG_PAGE + b"</p></article></body></html>"
    web.recorder.fallback = (200, {"Content-Type": "text/html; charset=utf-8"}, generic)
    web.add("/real", generic)
    check(cli)
    last = versions(tmp_path, url)[-1]
    assert last["state"] == "soft_404" and "cannot exist" in last["note"]
    probes = [path for path in web.recorder.hits if "no-such-page" in path]
    assert len(probes) == 1  # once per host per check


def test_a_real_article_that_quotes_a_notice_is_not_a_soft_404(cli, tmp_path, web):
    quoting = article("如何写好 404 页面", "好的错误页会说“页面不存在”，也会说 404 Not Found，" + "并给出回到首页的链接和站内搜索框。" * 10)
    url = fetched(cli, web, "/about-404", quoting)
    assert db_of(tmp_path)["pages"].get(url)["status"] == "archived"
    assert check(cli)["states"] == {"same": 1}


def test_a_login_wall_is_blocked_and_keeps_the_copy(cli, tmp_path, web):
    url = fetched(cli, web, "/member", article("会员文章", "以前公开的内容。"))
    web.add("/login", b"<html><body><form><input type=password name=p></form></body></html>")
    web.add("/member", b"", status=302, Location="/login?next=/member")
    assert check(cli)["states"] == {"blocked": 1}
    assert db_of(tmp_path)["pages"].get(url)["health"] == "blocked"


def test_a_dead_host_is_gone_only_on_checks_a_day_apart(cli, tmp_path):
    url = "http://127.0.0.1:9/was-here"
    assert cli("fetch", url, *QUICK).exit_code == 0
    with Archive(tmp_path / "archive") as archive:  # as if it had been archived before the host died
        archive.db.execute("update pages set warc_file = 'x.warc.gz', warc_offset = 0, warc_length = 1, status = 'archived' where url = ?", [url])
    assert check(cli)["states"] == {"failed": 1}
    db = db_of(tmp_path)
    db.execute("update versions set captured_at = '2020-01-01T00:00:00+00:00'")
    db.conn.commit()
    assert check(cli)["states"] == {"gone": 1}
    assert [v["state"] for v in versions(tmp_path, url)][-1] == "gone"


def test_check_selects_by_age_site_and_reading_list_and_resumes(cli, tmp_path, web, web2):
    (tmp_path / "a.md").write_text(f"- {web.add('/a', article('甲'))}\n")
    (tmp_path / "b.md").write_text(f"- {web2.add('/b', article('乙'))}\n")
    assert cli("fetch", "a.md", "b.md", *QUICK).exit_code == 0
    result = cli("check", *QUICK, "--json")  # checked just now, by the fetch: nothing older than a day
    assert json.loads(result.stdout)["checked"] == 0 and "nothing to check" in result.output
    assert check(cli, "--seed", "b.md")["checked"] == 1
    assert web2.recorder.hits["/b"] == 2 and web.recorder.hits["/a"] == 1
    assert check(cli, "--site", "127.0.0.1")["checked"] == 1
    for pattern in ("%", "_27.0.0.1"):  # no wildcards: a site no page is on is a mistake, said so
        result = cli("check", "--older-than", "0", *QUICK, "--site", pattern)
        assert result.exit_code == 2 and "no page of the site" in result.output
    health = {(row["reading_list"], row["health"]): row["links"] for row in check(cli)["health"]}
    assert health == {("a.md", "alive"): 1, ("b.md", "alive"): 1}


def test_never_archived_pages_are_tried_again(cli, tmp_path, web):
    url = web.url("/always-503")
    cli("fetch", url, *QUICK)
    web.add("/always-503", article("终于好了"))
    assert check(cli)["states"] == {"first": 1}
    assert db_of(tmp_path)["pages"].get(url)["status"] == "archived"


def test_rot_can_fail_the_command_for_a_timer(cli, tmp_path, web):
    fetched(cli, web, "/rots", article("会消失"))
    web.recorder.gone.add("/rots")
    result = cli("check", "--older-than", "0", *QUICK, "--fail-on-rot")
    assert result.exit_code == 3 and "gone" in result.output
    assert cli("check", "--older-than", "bad").exit_code == 2


def test_a_kill_during_a_check_loses_no_version(tmp_path, web):
    urls = [web.add(f"/k{i}", article(f"第{i}篇", "旧的内容。")) for i in range(3)]
    run = lambda *args, env=None: run_mirror(*args, *QUICK, cwd=tmp_path, env={"MIRROR_BROWSER": "never", **(env or {})})  # noqa: E731
    assert run("fetch", *urls).returncode == 0
    db = db_of(tmp_path)
    db.execute("update pages set checked_at = '2020-01-01T00:00:00+00:00'")  # last checked long ago: all due
    db.conn.commit()
    originals = {url: body_of(tmp_path, versions(tmp_path, url)[0]) for url in urls}
    for i in range(3):
        web.add(f"/k{i}", article(f"第{i}篇", "新的内容，改了好几处地方。"))
    killed = run("check", env={"MIRROR_CRASH_AT": "commit:2"})
    assert killed.returncode == -9
    assert run("check").returncode == 0  # resumes: what the killed run finished is not asked again
    for url in urls:
        states = [v["state"] for v in versions(tmp_path, url)]
        assert states == ["first", "changed"], (url, states)
        assert body_of(tmp_path, versions(tmp_path, url)[0]) == originals[url]
    assert sqlite3.connect(tmp_path / "archive" / "mirror.db").execute("pragma integrity_check").fetchone()[0] == "ok"


def test_an_archive_from_before_versions_gets_its_copies_as_first_versions(cli, tmp_path, web):
    url = fetched(cli, web, "/old", article("旧档案"))
    db = db_of(tmp_path)
    db.execute("drop view link_health")
    db["versions"].drop()
    db.execute("pragma user_version = 6")
    db.conn.commit()
    with Archive(tmp_path / "archive"):
        pass
    [first] = versions(tmp_path, url)
    assert first["state"] == "first" and first["text_hash"] and first["warc_file"]
    assert db_of(tmp_path)["pages"].get(url)["health"] == "first"


def test_a_check_falls_back_to_the_wayback_machine_as_fetch_does(cli, tmp_path, web):
    dead = web.url("/dead-page")
    assert cli("fetch", dead, *QUICK).exit_code == 0
    assert db_of(tmp_path)["pages"].get(dead)["status"] == "failed"
    report = check(cli, "--wayback", "--wayback-api", web.url(""))
    assert report["states"] == {"first": 1}
    [first] = [v for v in versions(tmp_path, dead) if v["state"] == "first"]
    assert first["how"] == "wayback" and db_of(tmp_path)["pages"].get(dead)["source"] == "wayback"
    health = {row["health"]: row["links"] for row in report["health"]}
    assert health == {"wayback only": 1}


def test_redirects_to_another_page_never_replace_the_saved_article(cli, tmp_path, web):
    alpha = fetched(cli, web, "/2019/alpha", article("阿尔法", "阿尔法文章的正文。"))
    beta = fetched(cli, web, "/2020/beta", article("贝塔", "贝塔文章是另一篇，讲的是别的事情。"))
    web.add("/2019/alpha", b"", status=301, Location="/2020/beta")  # the same bytes as beta's saved copy
    report = check(cli, "--older-than", "0")
    states = {p["url"]: p["state"] for p in report["pages"]}
    assert states[alpha] == "soft_404" and beta not in states  # beta is unchanged; alpha is not "same" as beta's copy
    last = versions(tmp_path, alpha)[-1]
    assert last["revisit_of"] is None and "another page" in last["note"]
    page = db_of(tmp_path)["pages"].get(alpha)
    assert (page["status"], page["title"]) == ("archived", "阿尔法") and "阿尔法文章" in page["text"]
    assert [h["url"] for h in json.loads(cli("search", "阿尔法", "--json").stdout)] == [alpha]


def test_an_unanswered_resolver_never_makes_pages_gone(cli, tmp_path, web, dns):
    dns.zone.addresses["news.test"] = ["127.0.0.1"]
    url = f"http://news.test:{web.port}/story"
    web.add("/story", article("新闻", "一条新闻。"))
    assert cli("fetch", url, *QUICK).exit_code == 0
    dns.zone.dropped.add("news.test")  # the machine is offline, or the resolver drops queries
    for _ in range(2):
        db = db_of(tmp_path)
        db.execute("update versions set captured_at = '2020-01-01T00:00:00+00:00'")
        db.conn.commit()
        states = check(cli)["states"]
        assert "gone" not in states, states
    assert db_of(tmp_path)["pages"].get(url)["status"] == "archived"


def test_a_short_article_whose_title_names_a_notice_is_archived(cli, tmp_path, web):
    url = fetched(cli, web, "/vue", article("解决 Vue 路由刷新后页面不存在的问题", "history 模式下刷新会 404，要在服务器上配置回退到 index.html。"))
    assert db_of(tmp_path)["pages"].get(url)["status"] == "archived"
    titled = fetched(
        cli,
        web,
        "/mdn",
        b"<html><head><title>404 Not Found - HTTP status codes</title></head><body><article>"
        b"<p>The HTTP 404 Not Found client error response status code indicates that the server cannot find the "
        b"requested resource. Links that lead to a 404 page are often called broken or dead links.</p></article></body></html>",
    )
    assert db_of(tmp_path)["pages"].get(titled)["status"] == "archived"


def test_link_health_reads_the_pages_from_an_index_not_their_rows(tmp_path):
    """The reading home's health panel at 100,000 links went past datasette's one second reading
    each linked page's row (its text overflows onto pages of its own); an index holds what it reads."""
    from mirror.check.link_health import HEALTH_INDEX

    with Archive(tmp_path / "archive") as archive:
        plan = " ".join(row[-1] for row in archive.db.execute("explain query plan select * from link_health"))
    assert f"COVERING INDEX {HEALTH_INDEX}" in plan, plan
