"""`mirror fetch` against real HTTP servers on 127.0.0.x: retries, redirects, blocked pages,
glued-URL repairs, cookies files and headers, refreshes, the Wayback Machine; no URL, redirect or
header ends a run (each is that page's failure, with a reason)."""

from __future__ import annotations

import json

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

import mirror.fetch
import mirror.fetch.runner
from mirror.fetch import FetchError, FetchOptions, run
from mirror.seeds import links_from_urls, read_seeds
from mirror.store import Archive
from mirror.warc import WarcLocation, read_payload

from .helpers import QUICK_ARGS, RETRYING_OPTIONS, attempts, db_of, extraction_pool, fetch_urls, page, warc_records
from .webserver import article


def _all_records(tmp_path):
    out = []
    for path in sorted((tmp_path / "archive" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                out.append(record)
    return out


def test_a_503_is_retried_until_it_succeeds(tmp_path, web):
    url = web.url("/flaky")
    db, _ = fetch_urls(tmp_path, [url], retries=3)
    assert page(db, url)["status"] == "archived"
    assert [a["http_status"] for a in attempts(db, url)] == [503, 503, 200]
    assert web.recorder.hits["/flaky"] == 3


def test_retry_after_is_honoured(tmp_path, web):
    url = web.url("/retry-after")
    db, _ = fetch_urls(tmp_path, [url], retries=1, backoff=0.0)
    assert page(db, url)["status"] == "archived"
    starts = [t for p, t in web.recorder.starts if p == "/retry-after"]
    assert starts[1] - starts[0] >= 0.9  # Retry-After: 1, not the 0 s backoff


def test_retries_give_up_with_a_reason(tmp_path, web):
    url = web.url("/always-503")
    db, _ = fetch_urls(tmp_path, [url], retries=2)
    row = page(db, url)
    assert row["status"] == "failed" and row["error"] == "http_503" and row["attempts"] == 3


def test_404_is_not_retried(tmp_path, web):
    url = web.url("/nothing-here")
    db, _ = fetch_urls(tmp_path, [url], retries=3)
    row = page(db, url)
    assert row["status"] == "failed" and row["error"] == "http_404" and "404" in row["error_message"]
    assert web.recorder.hits["/nothing-here"] == 1


def test_410_is_failed_not_retried(tmp_path, web):
    db, _ = fetch_urls(tmp_path, [web.url("/gone")])
    assert page(db, web.url("/gone"))["error"] == "http_410"
    assert web.recorder.hits["/gone"] == 1


def test_a_redirect_to_a_chinese_path_is_archived(tmp_path, web):
    """Chinese sites send Location in raw UTF-8; the page is fetched at the percent-encoded
    path, and the WARC request record holds the request line as sent (ASCII)."""
    from .webserver import article

    web.add("/%E6%96%87%E7%AB%A0", article("重定向之后"))
    url = web.add("/to-zh", b"", None, status=302, Location="/文章".encode().decode("latin-1"))  # UTF-8 on the wire
    db, _ = fetch_urls(tmp_path, [url])
    row = page(db, url)
    assert row["status"] == "archived", row["error_message"]
    assert row["final_url"] == web.url("/文章")
    lines = [r.http_headers.statusline for r in _all_records(tmp_path) if r.rec_type == "request"]
    assert "/%E6%96%87%E7%AB%A0 HTTP/1.1" in lines  # warcio keeps the method apart


def test_redirect_chain_is_kept(tmp_path, web):
    url = web.url("/redirect/3")
    db, _ = fetch_urls(tmp_path, [url])
    row = page(db, url)
    assert row["status"] == "archived"
    assert row["final_url"] == web.url("/article/redirected")
    assert json.loads(row["redirects"]) == [web.url("/redirect/2"), web.url("/redirect/1"), web.url("/article/redirected")]
    responses = [u for t, u, _ in warc_records(tmp_path / "archive") if t == "response"]
    assert responses == [url, web.url("/redirect/2"), web.url("/redirect/1"), web.url("/article/redirected")]


def test_redirect_loop_and_too_many_redirects(tmp_path, web):
    loop, long = web.url("/loop/a"), web.url("/redirect/12")
    db, _ = fetch_urls(tmp_path, [loop, long])
    assert page(db, loop)["error"] == "redirect_loop"
    assert page(db, long)["error"] == "too_many_redirects"


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "redirect_scheme"),
        ("javascript:alert(1)", "redirect_scheme"),
        ("mailto:someone@example.com", "redirect_scheme"),
        ("http://xn--/", "bad_url"),
        ("http://[::1", "bad_url"),
        ("http://" + "a" * 100_000 + ".example/", "bad_url"),
    ],
)
def test_bad_redirects_fail_that_page_only(tmp_path, web, location, reason):
    bad = web.add("/bad-redirect", b"", status=302, Location=location)
    good = web.url("/article/after")
    db, summary = fetch_urls(tmp_path, [bad, good])
    assert page(db, bad)["status"] == "failed" and page(db, bad)["error"] == reason
    assert page(db, bad)["error_message"]
    assert page(db, good)["status"] == "archived"
    assert summary.done == 2


@pytest.mark.hostile
def test_backslash_redirect_is_followed_or_failed_never_raised(tmp_path, web):
    url = web.add("/backslash", b"", status=302, Location="http:\\\\127.0.0.1\\x")
    db, _ = fetch_urls(tmp_path, [url, web.url("/article/b")])
    assert page(db, url)["status"] in ("failed", "archived")
    assert page(db, web.url("/article/b"))["status"] == "archived"


@pytest.mark.hostile
@pytest.mark.parametrize("url", ["http://xn--/", "http://" + "a" * 100_000 + ".example/"])
def test_bad_page_urls_fail_with_bad_url(tmp_path, web, url):
    good = web.url("/article/fine")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url, good]))
        stored = [r["url"] for r in archive.db.query("select url from pages where status = 'pending'")]
        mirror.fetch.run(archive, mirror.fetch.FetchOptions(delay=0, retries=2, backoff=0.05), pool=extraction_pool())
        rows = {r["url"]: r for r in archive.db.query("select url, status, error from pages")}
    assert rows[good]["status"] == "archived"
    for other in set(stored) - {good}:
        assert rows[other]["status"] == "failed" and rows[other]["error"] == "bad_url"


def test_a_page_that_timed_out_is_retried_once_unless_asked(tmp_path, web):
    url = web.url("/never")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url]))
        run(archive, FetchOptions(delay=0, timeout=0.5, retries=3, backoff=0, workers=1), pool=extraction_pool())
        assert web.recorder.hits["/never"] == 2
        run(
            archive, FetchOptions(delay=0, timeout=0.5, retries=3, backoff=0, workers=1, retry_failed=True, timeout_retries=3), pool=extraction_pool()
        )
    assert web.recorder.hits["/never"] == 2 + 4
    attempts = db_of(tmp_path).execute("select count(*) from attempts where url = ?", [url]).fetchone()[0]
    assert attempts == 6


def test_fetch_of_one_list_fetches_that_lists_pages_only(cli, tmp_path, web):
    first, second, dropped = web.add("/one", article("一")), web.add("/two", article("二")), web.add("/three", article("三"))
    (tmp_path / "earlier.md").write_text(f"{first}\n", encoding="utf-8")
    (tmp_path / "later.md").write_text(f"{second}\n{dropped}\n", encoding="utf-8")
    assert cli("links", "earlier.md", "later.md").exit_code == 0  # recorded, pending
    (tmp_path / "later.md").write_text(f"{second}\n", encoding="utf-8")  # a link removed from its list
    result = cli("fetch", "later.md", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    assert web.recorder.hits["/two"] == 1 and web.recorder.hits["/one"] == 0 and web.recorder.hits["/three"] == 0
    statuses = {row["url"]: row["status"] for row in db_of(tmp_path)["pages"].rows}
    assert statuses == {first: "pending", second: "archived", dropped: "pending"}

    # everything pending: what the other list links, not the page no list links any more
    result = cli("fetch", "later.md", "--all-pending", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    assert web.recorder.hits["/one"] == 1 and web.recorder.hits["/three"] == 0
    assert db_of(tmp_path)["pages"].get(dropped)["status"] == "pending"


@pytest.mark.parametrize(
    ("path", "words"),
    [("/zhihu-403", "zhihu"), ("/weixin-verify", "WeChat"), ("/cloudflare", "Cloudflare"), ("/login", "sign-in")],
)
def test_blocked_pages_are_failed_with_a_cookies_hint(tmp_path, web, path, words):
    url = web.url(path)
    db, _ = fetch_urls(tmp_path, [url], retries=1)
    row = page(db, url)
    assert row["status"] == "failed" and row["error"] == "blocked"
    assert words in row["error_message"] and "--cookies" in row["error_message"]
    assert row["warc_file"] is None  # never stored as the page's copy
    assert web.recorder.hits[path] == 1  # not retried


def test_glued_url_candidate_is_tried_after_404(tmp_path, web):
    seed = tmp_path / "glued.txt"
    seed.write_text(f"Tritonhttp://127.0.0.1:{web.port}/openai/tritonPython 编写高性能 GPU Kernel\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([seed], base=tmp_path))
        run(archive, FetchOptions(**RETRYING_OPTIONS), pool=extraction_pool())
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    row = page(db, web.url("/openai/tritonPython"))
    assert row["status"] == "archived"
    assert row["final_url"] == web.url("/openai/triton")
    assert [a["http_status"] for a in attempts(db, row["url"])] == [404, 200]


def test_cookies_file_without_header_and_a_bad_one(tmp_path, web):
    plain = tmp_path / "plain.txt"
    plain.write_text("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc\n", encoding="utf-8")
    fetch_urls(tmp_path, [web.url("/cookies")], cookies=plain)
    assert web.recorder.cookies["/cookies"] == ["sid=abc"]
    bad = tmp_path / "bad.txt"
    bad.write_text("this is not\ta cookie file\n", encoding="utf-8")
    with pytest.raises(FetchError, match="cookies"):
        fetch_urls(tmp_path / "other", [web.url("/cookies")], cookies=bad)


def test_user_agent_and_headers(tmp_path, web):
    fetch_urls(tmp_path, [web.url("/article/ua")], user_agent="TestAgent/1.0", headers={"X-Test": "yes"})
    (sent,) = web.recorder.headers["/article/ua"]
    assert sent["User-Agent"] == "TestAgent/1.0" and sent["X-Test"] == "yes"


def test_default_user_agent_is_browser_like_and_names_mirror(tmp_path, web):
    fetch_urls(tmp_path, [web.url("/article/ua")])
    agent = web.recorder.headers["/article/ua"][0]["User-Agent"]
    assert agent.startswith("Mozilla/5.0") and "mirror" in agent and "python-httpx" not in agent


def test_a_page_is_fetched_through_the_proxy_the_environment_names(tmp_path, web, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", web.url(""))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    db, _ = fetch_urls(tmp_path, ["http://example.invalid/through-proxy"])
    row = page(db, "http://example.invalid/through-proxy")
    assert row["status"] == "archived"
    _, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert b"via proxy" in body


def test_connection_refused_and_dns_failures(tmp_path):
    refused, unknown = "http://127.0.0.1:9/x", "http://no-such-host.invalid/x"
    db, _ = fetch_urls(tmp_path, [refused, unknown], retries=1)
    assert page(db, refused)["error"] == "connect" and page(db, refused)["attempts"] == 1  # refused is not retried
    assert page(db, unknown)["error"] == "dns" and page(db, unknown)["attempts"] == 1


def test_refresh_304_then_gone(tmp_path, web):
    url = web.url("/etag")
    db, _ = fetch_urls(tmp_path, [url])
    first = page(db, url)
    assert first["status"] == "archived" and first["etag"] == '"v1"'
    db, summary = fetch_urls(tmp_path, [url], refresh=True)
    assert summary.statuses["unchanged"] == 1
    assert web.recorder.headers["/etag"][1]["If-None-Match"] == '"v1"'
    assert page(db, url)["warc_file"] == first["warc_file"]
    web.recorder.gone.add("/etag")
    db, summary = fetch_urls(tmp_path, [url], refresh=True)
    gone = page(db, url)
    assert summary.statuses["gone"] == 1
    assert gone["status"] == "archived" and gone["gone_since"] and gone["error"] == "http_404"
    assert (gone["warc_file"], gone["warc_offset"]) == (first["warc_file"], first["warc_offset"])


def test_retry_failed_only_when_asked(tmp_path, web):
    url = web.url("/always-503")
    fetch_urls(tmp_path, [url], retries=0)
    fetch_urls(tmp_path, [url], retries=0)
    assert web.recorder.hits["/always-503"] == 1
    fetch_urls(tmp_path, [url], retries=0, retry_failed=True)
    assert web.recorder.hits["/always-503"] == 2


def test_a_dead_page_falls_back_to_the_wayback_machines_copy(tmp_path, web):
    dead, none = web.url("/dead-page"), web.url("/dead-nosnapshot")
    db, _ = fetch_urls(tmp_path, [dead, none], wayback=True, wayback_api=web.url(""))
    row = page(db, dead)
    assert row["status"] == "archived" and row["source"] == "wayback"
    assert row["wayback_timestamp"] == "20200101000000"
    assert "/web/20200101000000id_/" in row["final_url"]
    _, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert "from the wayback machine" in body.decode()
    assert page(db, none)["status"] == "failed" and page(db, none)["error"] == "http_404"


def test_articles_that_mention_verification_are_not_blocked(tmp_path, web):
    body = (
        "<html><head><title>账号安全验证的设计</title>"
        '<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script></head><body><article>'
        "<p>很多网站用安全验证拦截爬虫，当前环境异常时会要求用户完成滑块。本文讨论这些机制的设计与取舍。</p>"
        "<p>验证码、设备指纹和行为分析各有成本，过于激进的拦截会误伤正常用户，所以需要分级处理。</p>"
        "</article></body></html>"
    ).encode()
    url = web.add("/about-verification", body)
    db, _ = fetch_urls(tmp_path, [url])
    assert page(db, url)["status"] == "archived"


def test_an_article_quoting_the_wechat_check_is_archived(tmp_path, web):
    quote = "<p>打开链接时微信显示：“当前环境异常，完成验证后即可继续访问。”这是微信的反爬虫页面。</p>"
    body = (
        "<html><head><title>微信文章为什么打不开</title></head><body><article><h1>微信文章为什么打不开</h1>"
        + quote
        + "<p>"
        + "很多人在电脑上打开公众号文章时会遇到验证页面，本文解释其原因，并给出导出 Cookie 的办法。" * 20
        + "</p>"
        + "</article></body></html>"
    ).encode()
    url = web.add("/quotes-wechat", body, content_type="text/html; charset=utf-8")
    db, _ = fetch_urls(tmp_path, [url, web.url("/weixin-verify")])
    assert page(db, url)["status"] == "archived"
    assert page(db, web.url("/weixin-verify"))["error"] == "blocked"


@pytest.mark.parametrize(
    ("status", "head", "blocked"),
    [
        (403, "<title>安全验证 - 知乎</title>", True),
        (200, "<title>账号安全验证的设计</title><p>当前环境异常时会要求验证</p>", False),
        (200, "<p>环境异常</p><p>完成验证后即可继续访问</p>", True),
        (200, "<script>var a = '" + "x" * 5000 + "';</script><p>环境异常</p><p>完成验证后即可继续访问</p><a>去验证</a>", True),
        (
            200,
            "<article><p>微信的验证页写着：“环境异常，完成验证后即可继续访问”。</p>"
            + "<p>"
            + "这篇文章讨论反爬虫机制的设计与取舍。" * 40
            + "</p></article>",
            False,
        ),
        (503, "<title>Just a moment...</title>", True),
        (200, '<title>Blog</title><script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>', False),
        (200, '<title>Sign in – Accounts</title><form><input type="password"></form>', True),
        (200, '<title>用户登录</title><form><input type="password"></form>', True),
        (200, '<title>Login flows explained</title><form><input type="password"></form>', False),
        (200, '<title>新闻标题</title><div class="login"><input type="password"></div>', False),
        (200, "<title>验证码识别实战：从 CNN 到 CTC</title>", False),
        (200, "<title>验证码 - 某某网</title>", True),
        (200, '<title>Log in to GitHub · GitHub</title><form><input type="password"></form>', True),
        (401, "", True),
    ],
)
def test_challenges_and_login_walls_are_blocked_and_articles_about_them_are_not(status, head, blocked):
    from mirror.http.blocked import blocked_reason

    assert bool(blocked_reason(status, "https://a.example/x", "https://a.example/x", head)) is blocked


@pytest.mark.hostile
def test_an_unexpected_error_in_one_page_is_that_pages_failure(tmp_path, web, monkeypatch):
    """Whatever goes wrong inside one page's task (here: a bug planted in the page fetch)."""
    real = mirror.fetch.runner.fetch_page

    async def buggy(client, page, options):
        if page.url.endswith("/boom"):
            raise KeyError("planted bug")
        return await real(client, page, options)

    monkeypatch.setattr(mirror.fetch.runner, "fetch_page", buggy)
    boom, fine = web.url("/article/boom"), web.url("/article/fine")
    db, summary = fetch_urls(tmp_path, [boom, fine])
    assert page(db, boom)["status"] == "failed" and page(db, boom)["error"] == "internal"
    assert "KeyError" in page(db, boom)["error_message"] and "planted bug" in page(db, boom)["error_message"]
    assert page(db, fine)["status"] == "archived"


@pytest.mark.hostile
def test_hostile_header_values_do_not_end_the_run(tmp_path, web):
    odd = web.add("/odd-headers", article("odd"), **{"Content-Type": "text/html; charset=no-such-charset", "Retry-After": "Wed, 99 Foo"})
    db, _ = fetch_urls(tmp_path, [odd])
    assert page(db, odd)["status"] in ("archived", "no_text")
