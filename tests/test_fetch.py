"""`mirror fetch` against real HTTP servers on 127.0.0.x."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

from mirror.fetch import FetchError, FetchOptions, run
from mirror.seeds import links_from_urls, read_seeds
from mirror.store import Archive
from mirror.warc import WarcLocation, read_payload

FAST = dict(delay=0.0, timeout=5.0, retries=2, backoff=0.05)


def fetch_urls(tmp_path: Path, urls: list[str], **options) -> tuple[sqlite_utils.Database, object]:
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(archive, FetchOptions(**{**FAST, **options}))
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db"), summary


def page(db, url):
    return db["pages"].get(url)


def attempts(db, url):
    return list(db.query("select * from attempts where url = ? order by id", [url]))


def warc_records(archive_dir: Path) -> list:
    records = []
    for path in sorted((archive_dir / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.content_stream().read()))
    return records


def test_article_is_captured_to_warc_and_pointed_at(tmp_path, web):
    url = web.url("/article/1")
    db, summary = fetch_urls(tmp_path, [url])
    row = page(db, url)
    assert row["status"] == "archived" and row["http_status"] == 200
    assert row["content_type"].startswith("text/html")
    headers, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert "文章 1" in body.decode("utf-8")
    types = [(t, u) for t, u, _ in warc_records(tmp_path / "archive")]
    assert types == [("warcinfo", None), ("response", url), ("request", url)]  # (the file opens with its warcinfo)
    assert summary.statuses["archived"] == 1


def test_every_record_carries_digests_that_verify(tmp_path, web):
    """Block and payload digests of every record, checked by warcio itself (pywb and
    deduplication rely on them): pages, a gzip body, an empty one, a redirect, an image."""
    from .webserver import PNG

    image = web.add("/digest.png", PNG, "image/png")
    urls = [
        web.add("/with-image", f'<html><body><article><h1>图</h1><p>{"正文。" * 80}</p><img src="{image}"></article></body></html>'.encode()),
        web.url("/gzip"),
        web.url("/empty"),
        web.url("/redirect/1"),
    ]
    db, _ = fetch_urls(tmp_path, urls)
    assert db["resources"].get((urls[0], image))["status"] == "archived"
    checked = 0
    for path in sorted((tmp_path / "archive" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests=True):
                record.content_stream().read()
                assert record.rec_headers.get_header("WARC-Block-Digest")
                assert record.digest_checker.passed is not False, record.digest_checker.problems
                checked += 1
    assert checked >= 2 * (len(urls) + 2)  # request and response for each page, the image and the redirect hop


def test_capture_records_hold_what_warcios_own_writer_writes(tmp_path):
    """`CaptureWriter` builds a request/response pair itself (warcio's builder cost more than
    fetching a small image): the same fields, HTTP header blocks and payloads as warcio's
    writer gives the same capture, non-ASCII values and a truncated GBK body included."""
    import io
    import tempfile

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from mirror.warc import Capture, CaptureWriter

    body = "中文正文".encode("gbk") * 500
    spooled = tempfile.SpooledTemporaryFile()
    spooled.write(body)
    capture = Capture(
        url="http://例子.测试/搜索?q=中",
        method="GET",
        target="/%E6%90%9C%E7%B4%A2?q=%E4%B8%AD",
        request_headers=[("Host", "xn--fsqu00a.xn--0zwm56d"), ("User-Agent", "mirror/1"), ("X-Value", "é")],
        status=200,
        reason="OK",
        http_version="HTTP/1.1",
        response_headers=[
            ("Content-Type", "text/html; charset=gbk"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Disposition", "inline; filename=ü.html"),
        ],
        body=spooled,
        extra_warc_headers={"Mirror-Page": "http://例子.测试/", "WARC-Truncated": "length"},
    )
    CaptureWriter(tmp_path).write(capture)
    (path,) = (tmp_path / "warc").glob("*.warc.gz")
    with open(path, "rb") as f:
        ours = [_fields(record) for record in ArchiveIterator(f, check_digests=True) if record.rec_type != "warcinfo"]

    writer, buffer = WARCWriter(None, gzip=False), io.BytesIO()
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html; charset=gbk"), ("Content-Disposition", "inline; filename=ü.html"), ("Content-Length", str(len(body)))],
        protocol="HTTP/1.1",
    )
    response = writer.create_warc_record(
        capture.url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http, warc_headers_dict=capture.extra_warc_headers
    )
    request = writer.create_warc_record(
        capture.url,
        "request",
        payload=io.BytesIO(b""),
        length=0,
        http_headers=StatusAndHeaders(f"GET {capture.target} HTTP/1.1", capture.request_headers, is_http_request=True),
    )
    for record in (response, request):
        WARCWriter(buffer, gzip=False).write_record(record)
    buffer.seek(0)
    theirs = [_fields(record) for record in ArchiveIterator(buffer, check_digests=True)]
    assert ours == theirs
    with open(path, "rb") as f:
        response, request = [record.rec_headers for record in ArchiveIterator(f) if record.rec_type != "warcinfo"]
    assert request.get_header("WARC-Concurrent-To") == response.get_header("WARC-Record-ID")
    ids = [request.get_header("WARC-Record-ID"), response.get_header("WARC-Record-ID")]
    assert all(re.fullmatch(r"<urn:uuid:[0-9a-f-]{36}>", i) for i in ids) and ids[0] != ids[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", response.get_header("WARC-Date"))
    assert request.get_header("WARC-Date") == response.get_header("WARC-Date")


def _fields(record) -> tuple:
    skip = {"WARC-Record-ID", "WARC-Date", "WARC-Concurrent-To"}
    fields = sorted((k, v) for k, v in record.rec_headers.headers if k not in skip)
    payload = record.content_stream().read()
    assert record.digest_checker.passed is not False, record.digest_checker.problems
    return record.rec_type, fields, record.http_headers.to_str(), payload


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


def _all_records(tmp_path):
    out = []
    for path in sorted((tmp_path / "archive" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                out.append(record)
    return out


def test_gzip_body_is_stored_raw_and_reads_back_decoded(tmp_path, web):
    url = web.url("/gzip")
    db, _ = fetch_urls(tmp_path, [url])
    row = page(db, url)
    headers, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert headers.get_header("Content-Encoding") == "gzip"
    assert "压缩的文章" in body.decode("utf-8")


def test_503_twice_then_success(tmp_path, web):
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


def test_trickling_body_times_out(tmp_path, web):
    url = web.url("/trickle")
    db, _ = fetch_urls(tmp_path, [url], timeout=1.5, retries=0)
    row = page(db, url)
    assert row["status"] == "failed" and row["error"] == "timeout"
    assert "1.5" in row["error_message"]


@pytest.mark.parametrize("path", ["/big", "/big-declared", "/bomb"])
def test_oversized_bodies_are_refused(tmp_path, web, path):
    url = web.url(path)
    db, _ = fetch_urls(tmp_path, [url], max_bytes=1_000_000, retries=0)
    row = page(db, url)
    assert row["status"] == "failed" and row["error"] == "too_large"
    # the refused response is still captured, marked as truncated
    (attempt,) = attempts(db, url)
    assert attempt["warc_file"]


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
        run(archive, FetchOptions(**FAST))
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    row = page(db, web.url("/openai/tritonPython"))
    assert row["status"] == "archived"
    assert row["final_url"] == web.url("/openai/triton")
    assert [a["http_status"] for a in attempts(db, row["url"])] == [404, 200]


def test_cookies_are_sent_only_to_their_domain(tmp_path, web, web2):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tz_c0\tlogged-in-token\n"
        "127.0.0.2\tFALSE\t/\tFALSE\t0\tother\tsecond-host\n"
        ".zhihu.com\tTRUE\t/\tFALSE\t0\td_c0\tnever-sent-here\n"
        "127.0.0.1\tFALSE\t/\tTRUE\t0\tsecure_only\tnot-over-http\n",
        encoding="utf-8",
    )
    fetch_urls(tmp_path, [web.url("/cookies"), web2.url("/cookies")], cookies=cookies)
    assert web.recorder.cookies["/cookies"] == ["z_c0=logged-in-token"]
    assert web2.recorder.cookies["/cookies"] == ["other=second-host"]


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


def test_per_host_limit_is_respected(tmp_path, web):
    urls = [web.url(f"/slow/{i}?s=0.3") for i in range(6)]
    db, _ = fetch_urls(tmp_path, urls, per_host=2, concurrency=16)
    assert web.recorder.max_in_flight == 2
    assert {page(db, u)["status"] for u in urls} == {"archived"}


def test_delay_between_requests_to_one_host(tmp_path, web):
    urls = [web.url(f"/article/d{i}") for i in range(4)]
    fetch_urls(tmp_path, urls, per_host=2, delay=0.3)
    starts = sorted(t for p, t in web.recorder.starts)
    assert all(b - a >= 0.25 for a, b in zip(starts, starts[1:], strict=False))  # 0.3 s, less network jitter


def test_a_slow_host_does_not_hold_up_others(tmp_path, web, web2):
    slow = [web2.url(f"/slow/{i}?s=2") for i in range(3)]
    fast = [web.url(f"/article/f{i}") for i in range(6)]
    fetch_urls(tmp_path, slow + fast, per_host=1, concurrency=4)
    first_slow_done = min(t for p, t in web2.recorder.finishes)
    last_fast_done = max(t for p, t in web.recorder.finishes)
    assert last_fast_done < first_slow_done


def test_proxy_from_environment(tmp_path, web, monkeypatch):
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


def test_wayback_fallback(tmp_path, web):
    dead, none = web.url("/dead-page"), web.url("/dead-nosnapshot")
    db, _ = fetch_urls(tmp_path, [dead, none], wayback=True, wayback_api=web.url(""))
    row = page(db, dead)
    assert row["status"] == "archived" and row["source"] == "wayback"
    assert row["wayback_timestamp"] == "20200101000000"
    assert "/web/20200101000000id_/" in row["final_url"]
    _, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert "from the wayback machine" in body.decode()
    assert page(db, none)["status"] == "failed" and page(db, none)["error"] == "http_404"


def test_warc_rotation(tmp_path, web):
    urls = [web.url(f"/article/r{i}") for i in range(5)]
    db, _ = fetch_urls(tmp_path, urls, warc_rotate_bytes=1)
    files = {page(db, u)["warc_file"] for u in urls}
    assert len(files) == 5
    assert len(warc_records(tmp_path / "archive")) == 15  # a warcinfo, a response and its request a file


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
def test_blocked_page_recognition(status, head, blocked):
    from mirror.http.blocked import blocked_reason

    assert bool(blocked_reason(status, "https://a.example/x", "https://a.example/x", head)) is blocked
