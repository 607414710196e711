"""Bounds: no body, page or host exhausts the run's time, memory or descriptors. Sizes past
--max-bytes (compressed or not), trickling bodies, extractions past their deadline, a page with
hundreds of image hosts, a run over a whole hostile web."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from contextlib import ExitStack

import pytest
import sqlite_utils

from mirror import warc

from .helpers import (
    attempts,
    count,
    fetch,
    fetch_urls,
    integrity,
    page,
    page_outcomes,
    warc_records,
)
from .webserver import GBK_ARTICLE, HostileServer, article

QUADRATIC = ("<html><head><title>很多小块</title></head><body>" + "<p>word another</p>" * 60_000 + "</body></html>").encode()


def _sockets() -> int:
    return sum(
        os.readlink(f"/proc/self/fd/{fd}").startswith("socket:") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")
    )


@pytest.fixture
def any_loopback():
    """One server answering on every 127.x.y.z (bound to all addresses of a machine without a
    network): a thousand image hosts without a thousand servers."""
    from .webserver import HostileServer

    with HostileServer("0.0.0.0") as server:
        yield server


TIMEOUT, RETRIES, BACKOFF = 2.0, 2, 0.1


# route -> (status, error categories allowed)
EXPECTED = {
    "/article/ok": ("archived", {None}),
    "/trickle": ("failed", {"timeout"}),
    "/never": ("failed", {"timeout"}),
    "/reset": ("failed", {"reset", "protocol"}),
    "/flaky": ("archived", {None}),
    "/retry-after": ("archived", {None}),
    "/missing": ("failed", {"http_404"}),
    "/gone": ("failed", {"http_410"}),
    "/redirect/3": ("archived", {None}),
    "/loop/a": ("failed", {"redirect_loop"}),
    "/big": ("failed", {"too_large"}),
    "/bomb": ("failed", {"too_large"}),
    "/png": ("no_text", {None}),
    "/empty": ("no_text", {None}),
    "/json": ("no_text", {None}),
    "/truncated": ("failed", {"protocol", "reset"}),
    "/gbk-as-utf8": ("archived", {None}),
    "/zhihu-403": ("failed", {"blocked"}),
    "/login": ("failed", {"blocked"}),
    "/pdf": ("archived", {None}),
}


@pytest.fixture
def hostile_web():
    """One server per hostile route, each on its own loopback address."""
    with ExitStack() as stack:
        servers = {}
        for n, route in enumerate(EXPECTED, start=2):
            servers[route] = stack.enter_context(HostileServer(f"127.0.0.{n}", lifetime=300))
        yield servers


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


@pytest.mark.hostile
def test_gzip_bomb_and_huge_body_are_refused_with_bounded_memory(tmp_path, web):
    """300 MB of decoded zeros and a 5 MB body, with --max-bytes 1 MB: peak RSS stays small."""
    urls = [web.url("/bomb"), web.url("/big")]
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run([sys.executable, '-m', 'mirror', 'fetch', *sys.argv[1:]], check=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *urls, "--max-bytes", "1000000", "--delay", "0", "--retries", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    peak_kb = int(result.stdout.strip())
    assert peak_kb < 200 * 1024, f"peak RSS {peak_kb} KB"
    db = tmp_path / "archive" / "mirror.db"
    assert count(db, "select count(*) from pages where error = 'too_large'") == 2


@pytest.mark.hostile
def test_a_body_labelled_gzip_twice_is_counted_decoded(tmp_path, web):
    page = web.url("/bomb-twice")
    styled = web.add("/styled", article("样式", '<link rel="stylesheet" href="/bomb-twice.css">'))
    db, _ = fetch(tmp_path, [page, styled], max_bytes=10_000_000)
    row = db["pages"].get(page)
    assert (row["status"], row["error"]) == ("failed", "too_large")
    css = db["resources"].get((styled, web.url("/bomb-twice.css")))
    assert (css["status"], css["error"]) == ("failed", "too_large")


@pytest.mark.hostile
def test_a_capture_is_read_back_within_a_bound(tmp_path):
    """However it got into the archive, a payload is decoded in pieces and refused past the
    limit it is read with; its first bytes can still be read."""
    writer = warc.CaptureWriter(tmp_path)
    bomb = gzip.compress(b"\0" * 50_000_000, 9)
    location = writer.write(
        warc.Capture(
            url="http://h/x.css",
            method="GET",
            request_headers=[],
            status=200,
            reason="OK",
            http_version="HTTP/1.1",
            response_headers=[("Content-Type", "text/css"), ("Content-Encoding", "gzip"), ("Content-Encoding", "gzip")],
            body=io.BytesIO(bomb),
        )
    )
    writer.close()
    with pytest.raises(warc.WarcError, match="more than 1,000,000 bytes"):
        warc.read_payload(tmp_path, location, limit=1_000_000)
    _, head = warc.read_head(tmp_path, location, 100)
    assert head == b"\0" * 100
    assert warc.payload_coding([(b"Content-Encoding", b"gzip"), (b"Content-Encoding", b"gzip")]) == "gzip"
    assert warc.payload_coding([(b"Content-Encoding", b"gzip, br")]) == ""  # warcio decodes neither


@pytest.mark.hostile
def test_an_extraction_past_its_deadline_keeps_the_plain_text(tmp_path, web, cli):
    """The deadline is wall-clock time, which a loaded machine stretches, and the plain text must
    be read within it too: its 3 s lie far from both costs of this page, ~15 s of CPU for the full
    extraction and ~0.3 s for its plain text (with 1 s, the plain text missed it under load)."""
    url = web.add("/many-blocks", QUADRATIC)
    normal = web.add("/normal", article("正常的文章"))
    db, _ = fetch(tmp_path, [url, normal], extract_timeout=3.0)
    row = db["pages"].get(url)
    assert row["status"] == "archived" and row["title"] == "很多小块", row["extract_note"]
    assert "longer than 3 s" in row["extract_note"] and "plain text" in row["extract_note"]
    assert row["text"].startswith("word another")
    assert db["pages"].get(normal)["extract_note"] is None
    result = cli("reindex", "--archive", str(tmp_path / "archive"), "--extract-timeout", "3")
    assert result.exit_code == 0, result.output
    assert "longer than 3 s" in db["pages"].get(url)["extract_note"]


@pytest.mark.hostile
def test_idle_connections_to_many_hosts_are_closed_and_a_page_fetches_a_bounded_number_of_images(tmp_path, any_loopback, monkeypatch):
    import asyncio

    from mirror.fetch.resources import MAX_IMAGES
    from mirror.http import Budget, Reach
    from mirror.http import client as _client

    if not sys.platform.startswith("linux"):
        pytest.skip("counts sockets in /proc/self/fd")
    web = any_loopback
    web.add("/img.png", b"\x89PNG\r\n\x1a\nimage", content_type="image/png")
    hosts = [f"127.0.{1 + i // 250}.{1 + i % 250}:{web.port}" for i in range(MAX_IMAGES + 50)]
    images = "".join(f'<img src="http://{host}/img.png">' for host in hosts)
    url = web.add("/gallery", article("图很多", images))
    db, _ = fetch(tmp_path, [f"http://127.0.0.1:{web.port}/gallery"], per_host=1)
    rows = list(db.query("select status, error from resources where page_url = ?", [f"http://127.0.0.1:{web.port}/gallery"]))
    assert sum(r["status"] == "archived" for r in rows) == MAX_IMAGES
    assert [r["error"] for r in rows if r["status"] == "failed"] == ["too_many"] * 50
    assert url  # served

    monkeypatch.setattr(_client, "SWEEP_EVERY", 3600)  # the sweep is called below, at a known time

    async def many_hosts() -> tuple[int, int, int]:
        client = _client.Client(
            warc.CaptureWriter(tmp_path / "sweep"),
            concurrency=16,
            per_host=1,
            delay=0,
            timeout=5,
            max_bytes=10**6,
            max_redirects=3,
            headers={},
            cookies=None,
            keepalive=0.3,
        )
        before = _sockets()
        try:
            budget = Budget(timeout=5, retries=0, concurrency=16)
            answers = await asyncio.gather(*(client.get(f"http://{host}/img.png", budget=budget, reach=Reach.LOOPBACK) for host in hosts[:200]))
            assert all(a.ok for a in answers)
            during = _sockets()
            await asyncio.sleep(0.5)  # past the keep-alive
            await client.sweep_once()
            await asyncio.sleep(0.5)  # the transports close on the loop's next turns, the server's ends after them
            return before, during, _sockets()
        finally:
            await client.aclose()

    before, during, after = asyncio.run(many_hosts())
    assert during >= before + 150  # one kept-alive socket per host
    assert after <= before + 5


@pytest.mark.hostile
def test_running_out_of_descriptors_is_named():
    import errno

    import httpx

    from mirror.http.failures import classify_error as _classify_error

    try:
        try:
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as cause:
            raise httpx.ConnectError("All connection attempts failed") from cause
    except httpx.ConnectError as exc:
        reason, message = _classify_error(exc)
    assert reason == "connect" and "too many open files" in message and "ulimit -n" in message


@pytest.mark.hostile
def test_fetch_over_the_hostile_web_finishes_in_bounded_time_and_memory(tmp_path, hostile_web):
    urls = [server.url(route) for route, server in hostile_web.items()]
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "hostile.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
    probe = (
        "import resource, subprocess, sys, time\n"
        "start = time.monotonic()\n"
        "code = subprocess.run([sys.executable, '-m', 'mirror', 'fetch', *sys.argv[1:]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(code, time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    args = [
        "--timeout",
        str(TIMEOUT),
        "--retries",
        str(RETRIES),
        "--backoff",
        str(BACKOFF),
        "--delay",
        "0",
        "--max-bytes",
        "1000000",
        "--workers",
        "2",
    ]
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    code, elapsed, peak_kb = result.stdout.split()
    assert int(code) == 0
    # each host has one URL: the worst is every attempt timing out, plus backoff and a Retry-After of 1 s
    backoffs = sum(min(BACKOFF * 2**i + BACKOFF / 2, 120) for i in range(RETRIES))
    bound = (RETRIES + 1) * TIMEOUT + backoffs + 1 + 15  # + start-up and extraction slack
    assert float(elapsed) < bound, f"took {float(elapsed):.1f} s, bound {bound:.1f} s"
    assert int(peak_kb) < 300 * 1024, f"peak RSS {int(peak_kb) // 1024} MB"

    got = page_outcomes(tmp_path / "archive")
    for route, (status, errors) in EXPECTED.items():
        url_key = next(k for k in got if k == route.lstrip("/"))
        assert got[url_key][0] == status, (route, got[url_key])
        assert got[url_key][1] in errors, (route, got[url_key])
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    failed = list(db.query("select url, error_message from pages where status = 'failed'"))
    assert all(r["error_message"] for r in failed)  # every failure says why
    gbk = next(db.query("select title, text from pages where url like '%gbk-as-utf8'"))
    assert gbk["title"] == "流水线并行" and "气泡是流水线并行的主要开销" in gbk["text"]
    assert GBK_ARTICLE.count("流水线") <= gbk["text"].count("流水线") + 2
    pdf = next(db.query("select kind, title from pages where url like '%/pdf'"))
    assert pdf == {"kind": "pdf", "title": "Pipeline parallelism"}
    assert len(warc_records(tmp_path / "archive")) > 0
    assert integrity(tmp_path / "archive") == "ok"
