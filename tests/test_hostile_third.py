"""Hostile input, third round (issue 23): secrets stay with their hosts; no body, header or
page exhausts memory, time or descriptors; no code runs from the working folder."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

from mirror import warc
from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .webserver import article

pytestmark = pytest.mark.hostile
FAST = dict(delay=0.0, timeout=10.0, retries=0, workers=1)


def fetch(tmp_path, urls, **options):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(archive, FetchOptions(**{**FAST, **options}))
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db"), summary


# 2. Two `Content-Encoding: gzip` fields: counted as read back (decoded once), not as raw bytes.


def test_a_body_labelled_gzip_twice_is_counted_decoded(tmp_path, web):
    page = web.url("/bomb-twice")
    styled = web.add("/styled", article("样式", '<link rel="stylesheet" href="/bomb-twice.css">'))
    db, _ = fetch(tmp_path, [page, styled], max_bytes=10_000_000)
    row = db["pages"].get(page)
    assert (row["status"], row["error"]) == ("failed", "too_large")
    css = db["resources"].get((styled, web.url("/bomb-twice.css")))
    assert (css["status"], css["error"]) == ("failed", "too_large")


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


# 3. Headers are data: any bytes in a header or a status text are recorded, never a failure.


def test_utf8_header_values_and_status_text_are_recorded(tmp_path, web):
    url = web.url("/utf8-headers")
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["status"] == "archived", row["error_message"]
    records = []
    for path in (tmp_path / "archive" / "warc").glob("*.warc.gz"):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                assert record.digest_checker.passed is not False
                if record.rec_type == "response":
                    records.append(record.http_headers)
    headers = records[0]
    assert headers.get_statuscode() == "200" and "Café" in headers.statusline
    assert headers.get_header("X-Note") == "a=é;b é"
    assert headers.get_header("Link") == "<https://cdn.example/字体.woff2>; rel=preload"


def test_a_header_cannot_forge_a_line_of_the_record(tmp_path):
    writer = warc.CaptureWriter(tmp_path)
    location = writer.write(
        warc.Capture(
            url="http://h/",
            method="GET",
            request_headers=[("X-Client", "v=é;id é\r\nInjected: yes")],
            status=200,
            reason="Café\r\nForged: 1",
            http_version="HTTP/1.1",
            response_headers=[("X-A", "字\nB: c")],
            body=io.BytesIO(b"ok"),
        )
    )
    writer.close()
    headers, body = warc.read_payload(tmp_path, location)
    assert body == b"ok" and headers.get_header("Forged") is None and headers.get_header("B") is None
    assert headers.get_header("X-A") == "字 B: c"


# 6. Extraction has a deadline: past it, the page's plain text, with a note.

QUADRATIC = ("<html><head><title>很多小块</title></head><body>" + "<p>word another</p>" * 60_000 + "</body></html>").encode()


def test_an_extraction_past_its_deadline_keeps_the_plain_text(tmp_path, web, cli):
    url = web.add("/many-blocks", QUADRATIC)
    normal = web.add("/normal", article("正常的文章"))
    db, _ = fetch(tmp_path, [url, normal], extract_timeout=1.0)
    row = db["pages"].get(url)
    assert row["status"] == "archived" and row["title"] == "很多小块"
    assert "longer than 1 s" in row["extract_note"] and "plain text" in row["extract_note"]
    assert row["text"].startswith("word another")
    assert db["pages"].get(normal)["extract_note"] is None
    result = cli("reindex", "--archive", str(tmp_path / "archive"), "--extract-timeout", "1")
    assert result.exit_code == 0, result.output
    assert "longer than 1 s" in db["pages"].get(url)["extract_note"]


# 8. No code from the working folder: a reading list cloned with a `pickle.py` in it.


def test_a_module_in_the_working_folder_never_runs(tmp_path, web):
    planted = (
        "import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), f'RAN-{os.getpid()}'), 'w').close()\nraise ImportError('planted')\n"
    )
    for name in ("pickle.py", "trafilatura.py", "lxml.py"):
        (tmp_path / name).write_text(planted)
    url = web.add("/planted", article("种下的模块"))
    (tmp_path / "long.md").write_text("".join(f"- {url}?n={i}\n" for i in range(200_000)))  # read on two processes
    mirror = Path(sys.executable).with_name("mirror")  # the console script, as a user runs it
    env = {k: v for k, v in os.environ.items() if k not in ("MIRROR_ARCHIVE", "PYTHONSAFEPATH")}
    for args in (["links", "long.md", "--archive", "lists"], ["fetch", url, "--delay", "0", "--browser", "never"]):
        done = subprocess.run([str(mirror), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.glob("RAN-*")) == []
    assert sqlite_utils.Database(tmp_path / "lists" / "mirror.db")["links"].count == 200_000
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    assert db["pages"].get(url)["status"] == "archived"


# 1. The user's --header values reach only the seed hosts in the browser too.

LONG = "<p>" + "A page rendered in the browser with a token for its own host and nobody else's. " * 6 + "</p>"


def test_header_values_stay_with_the_seed_host_in_the_browser(tmp_path, web, web2):
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    web2.add("/img.png", b"\x89PNG\r\n\x1a\nimage", content_type="image/png")
    web2.add("/api", b"{}", content_type="application/json")
    web2.add("/landing", b"landed", content_type="text/plain")
    web.add("/own.png", b"\x89PNG\r\n\x1a\nown", content_type="image/png")
    web.add("/hop", b"", status=302, Location=web2.url("/landing"))
    body = (
        f"<html><head><title>Token</title></head><body><article><h1>Token</h1>{LONG}"
        f'<img src="/own.png"><img src="{web2.url("/img.png")}"></article>'
        f"<script>fetch({json.dumps(web2.url('/api'))}); fetch('/hop');</script></body></html>"
    )
    url = web.add("/page", body.encode())
    fetch(tmp_path, [url], headers={"Authorization": "Bearer s3cret"}, browser="always", chromium=CHROMIUM, images=False, timeout=12)
    seen = {path: [h.get("Authorization") for h in hits] for path, hits in web.recorder.headers.items()}
    assert seen["/page"] == ["Bearer s3cret"]  # fetched once: the render is made from that capture
    assert seen["/own.png"] == ["Bearer s3cret"]
    elsewhere = {path: [h.get("Authorization") for h in hits] for path, hits in web2.recorder.headers.items()}
    assert set(elsewhere) >= {"/img.png", "/api", "/landing"}
    assert all(value is None for values in elsewhere.values() for value in values), elsewhere


# 5. A page's redirects and navigations follow the address rule of its resources.


def test_a_public_page_cannot_redirect_us_to_loopback(tmp_path, web, monkeypatch):
    secret = web.add("/status", b"API_KEY=hunter2", content_type="text/plain")
    web.add("/to-loopback", b"", status=302, Location=secret)
    monkeypatch.setenv("HTTP_PROXY", web.url(""))  # a public site, through a proxy
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = "http://public.example/to-loopback"
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert (row["status"], row["error"]) == ("failed", "private_address")
    assert "--allow-private" in row["error_message"]
    assert web.recorder.hits["/status"] == 0
    db, _ = fetch(tmp_path / "allowed", [url], allow_private=True)
    assert db["pages"].get(url)["status"] in ("archived", "no_text") and web.recorder.hits["/status"] == 1


def test_a_rendered_public_page_that_navigates_to_loopback_keeps_nothing_of_it(tmp_path, web, monkeypatch):
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    web.add("/status", b"<html><body><p>API_KEY=hunter2 " + b"secret words " * 80 + b"</p></body></html>")
    web.add("/go-local", b"", status=302, Location=web.url("/status"))
    web.add(
        "/shell",
        b"<html><head><title>App</title></head><body><div id=app></div>"
        b"<script>setTimeout(() => { location.href = '/go-local' }, 50)</script></body></html>",
    )
    monkeypatch.setenv("HTTP_PROXY", web.url(""))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = "http://public.example/shell"
    db, _ = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=12)
    row = db["pages"].get(url)
    assert "hunter2" not in (row["text"] or "") and row["capture"] != "browser"
    assert web.recorder.hits["/status"] == 0 and "more private address" in row["render_note"], row["render_note"]
    for path in (tmp_path / "archive" / "warc").glob("*.warc.gz"):
        assert b"hunter2" not in gzip.decompress(path.read_bytes())


# 9. A stylesheet in UTF-7 (which no browser reads) cannot end the run.


def test_a_utf7_stylesheet_is_read_as_a_browser_reads_it(tmp_path, web):
    web.add("/u7.css", b'@charset "utf-7"; body { background: url(/bg+2AA-.png) }', content_type="text/css")
    web.add("/bg+2AA-.png", b"\x89PNG\r\n\x1a\nbg", content_type="image/png")
    url = web.add("/utf7", article("七位", '<link rel="stylesheet" href="/u7.css">'))
    other = web.add("/other", article("另一篇", '<img src="/bg+2AA-.png">'))
    db, _ = fetch(tmp_path, [url, other])
    assert db["pages"].get(url)["status"] == "archived" and db["pages"].get(other)["status"] == "archived"
    resources = {r["url"]: r["status"] for r in db["resources"].rows}
    assert resources[web.url("/u7.css")] == "archived" and resources[web.url("/bg+2AA-.png")] == "archived"


def test_a_navigation_is_refused_before_its_redirect_reaches_a_more_private_address(tmp_path, web, web2, monkeypatch):
    """A rendered page's navigation is fetched by the run's client, its redirects hop by hop, each
    checked before it is asked for: a public page (through a proxy) that navigates to a redirect
    to this machine (127.0.0.2) never reaches it."""
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    web2.add("/status", b"API_KEY=hunter2", content_type="text/plain")
    web.add("/go-local", b"", status=302, Location=web2.url("/status"))
    web.add("/via", b"", status=302, Location="/go-local")
    web.add("/shell", b"<html><body><div id=app></div><script>setTimeout(() => { location.href = '/via' }, 50)</script></body></html>")
    monkeypatch.setenv("HTTP_PROXY", web.url(""))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,127.0.0.2")
    url = "http://public.example/shell"
    db, _ = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=12)
    row = db["pages"].get(url)
    assert web2.recorder.hits["/status"] == 0
    assert "hunter2" not in (row["text"] or "") and "more private address" in row["render_note"], row["render_note"]
    for path in (tmp_path / "archive" / "warc").glob("*.warc.gz"):
        assert b"hunter2" not in gzip.decompress(path.read_bytes())


# 7. Descriptors: a page's images on many hosts do not hold sockets for the rest of the run.


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


# 10. The browser's memory is watched during a page, not only between pages.


def test_a_page_that_takes_the_browser_past_its_bound_is_stopped(web):
    import asyncio

    from mirror.browser.renderer import Renderer

    from .conftest import render_directly
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    # (it keeps changing its page, so that it is still being rendered when the memory is next looked at, however slow the machine)
    hog = web.add(
        "/hog",
        b"<html><body><p>hog</p><script>const kept = []; setInterval(() => {"
        b" const b = new ArrayBuffer(64 * 1024 * 1024); new Uint8Array(b).fill(7); kept.push(b);"
        b" document.body.append(String(kept.length)) }, 50)</script></body></html>",
    )
    calm = web.add("/calm", article("平静"))

    async def render():
        renderer = Renderer(CHROMIUM, tabs=1, timeout=30, user_agent="MirrorTest/1.0", cookies=[], memory_mb=200)
        try:
            return await render_directly(renderer, hog), await render_directly(renderer, calm)
        finally:
            await renderer.close()

    stopped, after = asyncio.run(render())
    assert stopped.error == "render_memory" and stopped.dom is None
    assert any("passed 1000 MB" in note for note in stopped.notes), stopped.notes
    assert after.error is None and b"\xe5\xb9\xb3\xe9\x9d\x99" in after.dom  # the next page gets a new browser


# 4. DNS rebinding: the connection goes to the address that was looked up and checked.


def test_a_connection_goes_to_the_address_that_was_checked(tmp_path, web, monkeypatch):
    from .dnsserver import DNSServer
    from .test_host_health import with_images
    from .webserver import PNG

    web.add("/admin", b"rebooted", content_type="text/plain")
    web.add("/photo.png", PNG, content_type="image/png")
    with DNSServer("127.0.0.1") as dns:
        # public at the check, this machine a moment later (TTL 0); and a name only our resolver knows
        dns.zone.rebinding["rebind.test"] = ["93.184.216.35", "127.0.0.1"]
        dns.zone.rebinding["pinned.test"] = ["127.0.0.1", "127.0.0.9"]
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        local = web.add("/local-page", with_images(f"http://pinned.test:{web.port}/photo.png"))
        web.add("/public-page", with_images(f"http://rebind.test:{web.port}/admin?action=reboot"))
        monkeypatch.setenv("HTTP_PROXY", web.url(""))  # the public page: a public site, through a proxy
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,rebind.test,pinned.test")
        db, _ = fetch(tmp_path, ["http://public.example/public-page", local], resource_timeout=2)
        rows = {r["url"]: r for r in db["resources"].rows}
    assert web.recorder.hits["/admin"] == 0  # asked of 93.184.216.35 (unreachable here), never of 127.0.0.1
    assert rows[f"http://rebind.test:{web.port}/admin?action=reboot"]["status"] == "failed"
    # a name the system's resolver does not know: fetched at the address our lookup gave, not looked up again
    assert rows[f"http://pinned.test:{web.port}/photo.png"]["status"] == "archived"
