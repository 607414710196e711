"""Hostile input, fourth round: a review of issue 23's guards and the resolver found ways round
them. Two spellings of one name, a proxy decision that differs from httpx's, a Content-Encoding
with Unicode spaces, `*.localhost` in the browser, a failed route fetch, a lookup outside the
page's timeout, a bad MIRROR_NAMESERVERS."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeadersParser

from mirror import warc
from mirror.fetch import FetchOptions, run
from mirror.http import Budget, Client, Reach
from mirror.http.resolver import nameservers_from_env
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .dnsserver import DNSServer
from .test_host_health import with_images
from .webserver import PNG

pytestmark = pytest.mark.hostile


def client_for(folder: Path, **options) -> Client:
    return Client(
        warc.CaptureWriter(folder),
        **{**dict(concurrency=4, per_host=2, delay=0, timeout=5, max_bytes=10**7, max_redirects=5, headers={}, cookies=None), **options},
    )


def fetch(folder: Path, urls: list[str], **options) -> sqlite_utils.Database:
    with Archive(folder / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        run(archive, FetchOptions(**{**dict(delay=0, timeout=10, retries=0, workers=1, concurrency=1, resource_timeout=5), **options}))
    return sqlite_utils.Database(folder / "archive" / "mirror.db")


def test_two_spellings_of_one_name_are_one_lookup(tmp_path, web, monkeypatch):
    """`bücher.test` and `xn--bcher-kva.test` are one name: the second spelling does not look it
    up again (and so cannot rebind it to this machine under the first one's check)."""
    web.add("/admin", b"rebooted", content_type="text/plain")
    with DNSServer("127.0.0.1") as dns:
        dns.zone.rebinding["xn--bcher-kva.test"] = ["93.184.216.34", "127.0.0.1"]  # public first, then this machine
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)

        async def go() -> None:
            client = client_for(tmp_path)
            budget = Budget(timeout=2, retries=0, concurrency=4)
            try:
                for url in (
                    "http://xn--bcher-kva.test:1/warm-up.png",
                    f"http://bücher.test:{web.port}/x.png",
                    f"http://xn--bcher-kva.test:{web.port}/admin?action=reboot",
                ):
                    await client.get(url, budget=budget, reach=Reach.PUBLIC)
            finally:
                await client.aclose()

        asyncio.run(go())
    assert web.recorder.hits.get("/admin", 0) == 0
    assert dns.queries["xn--bcher-kva.test"] <= 2  # one lookup (A and AAAA), not one per spelling


def _listener() -> tuple[int, list[bytes]]:
    """A TCP port that records what each connection sends first."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            connection.settimeout(2)
            try:
                seen.append(connection.recv(4096))
            except OSError:
                seen.append(b"")
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], seen


@pytest.fixture
def proxy_env(monkeypatch, web):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", web.url(""))  # the test web answers absolute URIs as a proxy
    with DNSServer("127.0.0.1") as dns:
        dns.zone.addresses["intranet.test"] = ["127.0.0.1"]
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        yield monkeypatch


def test_a_no_proxy_entry_with_a_port_is_read_as_httpx_reads_it(tmp_path, web, proxy_env):
    """NO_PROXY `intranet.test:PORT`: httpx connects directly, so the name is looked up and
    checked (the standard library's reading would have called it proxied and unchecked)."""
    web.add("/secret.png", PNG, content_type="image/png")
    web.add("/page", with_images(f"http://intranet.test:{web.port}/secret.png"))
    proxy_env.setenv("NO_PROXY", f"127.0.0.1,intranet.test:{web.port}")
    db = fetch(tmp_path, ["http://public.example/page"])
    assert web.recorder.hits.get("/secret.png", 0) == 0
    assert {row["error"] for row in db["resources"].rows} == {"private_address"}


def test_a_name_checked_as_proxied_for_http_is_looked_up_for_https(tmp_path, web, proxy_env):
    """HTTP_PROXY and no HTTPS_PROXY: `intranet.test` over http goes through the proxy (no check
    here), over https directly: that one is looked up and refused."""
    port, seen = _listener()
    web.add("/one", with_images(f"http://intranet.test:{web.port}/a.png"))
    web.add("/two", with_images(f"https://intranet.test:{port}/b.png"))
    proxy_env.setenv("NO_PROXY", "127.0.0.1")
    db = fetch(tmp_path, ["http://public.example/one", "http://public.example/two"])
    assert seen == []  # no connection to this machine's port
    row = db["resources"].get(("http://public.example/two", f"https://intranet.test:{port}/b.png"))
    assert row["error"] == "private_address"


@pytest.mark.parametrize("value", [b"gzip\xc2\xa0", b"\xc2\xa0gzip", b"gzip\xe2\x80\x83", b" GZIP ", b"gzip\xa0", b"x-gzip", b"gzip, br"])
def test_the_content_coding_counted_is_the_one_warcio_reads_back(value):
    """A head recorded as raw bytes is read back by warcio (UTF-8, Unicode spaces stripped): the
    fetcher counts a body with the coding warcio will decode it with, or --max-bytes is bypassed."""
    head = b"HTTP/1.1 200 Caf\xc3\xa9\r\nContent-Type: text/html\r\nContent-Encoding: " + value + b"\r\n\r\n"
    parsed = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"]).parse(__import__("io").BytesIO(head))
    coding = (parsed.get_header("content-encoding") or "").lower()
    read_back = coding if coding in BufferedReader.get_supported_decompressors() else ""
    assert warc.payload_coding([(b"Content-Type", b"text/html"), (b"Content-Encoding", value)]) == read_back


def test_a_page_lookup_counts_in_its_timeout(tmp_path, monkeypatch):
    with DNSServer("127.0.0.1") as dns:
        dns.zone.dropped.add("silent.test")
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)

        async def go():
            client = client_for(tmp_path, timeout=1.0)
            try:
                started = time.monotonic()
                exchange = await client.get("http://silent.test/page")
                return exchange, time.monotonic() - started
            finally:
                await client.aclose()

        exchange, seconds = asyncio.run(go())
    assert exchange.error == "dns" and exchange.retryable
    assert seconds < 2.5  # not the resolver's 3 tries of 1 s and more


@pytest.mark.parametrize(
    ("value", "servers"), [("[::1]:5353", ["[::1]:5353"]), ("127.0.0.1:53, 10.0.0.1", ["127.0.0.1:53", "10.0.0.1"]), ("::1", ["::1"])]
)
def test_nameservers_are_read_as_written(monkeypatch, value, servers):
    monkeypatch.setenv("MIRROR_NAMESERVERS", value)
    assert nameservers_from_env() == servers


@pytest.mark.parametrize("value", [" , ", "dns.example", "127.0.0.1:99999", "[::1]x"])
def test_a_bad_nameservers_value_is_a_clear_error(cli, monkeypatch, value):
    monkeypatch.setenv("MIRROR_NAMESERVERS", value)
    result = cli("fetch", "https://example.com/")
    assert result.exit_code == 2
    assert "MIRROR_NAMESERVERS" in result.stderr and "Traceback" not in result.output


def test_localhost_names_are_this_machine_in_the_browser(tmp_path, web, web2, monkeypatch):
    """chromium would answer `*.localhost` itself (127.0.0.1), whatever mirror's resolver says; a
    rendered page's requests go through the run's client instead, which knows such a name for
    this machine: a public page (through a proxy) cannot reach it through one."""
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    port = web.port
    for path in ("/secret.png", "/control.png"):
        web.add(path, PNG, content_type="image/png")
    web.add("/status", b"<html><body><p>API_KEY=hunter2</p></body></html>")
    web2.add(
        "/page",
        f"""<html><body><div id=app></div><p>public page</p>
        <img src="http://x.localhost:{port}/secret.png"><img src="http://127.0.0.1:{port}/control.png">
        <script>fetch('http://app.localhost:{port}/admin', {{mode: 'no-cors'}});
        setTimeout(() => {{ location.href = 'http://x.localhost:{port}/status' }}, 300)</script></body></html>""".encode(),
    )
    monkeypatch.setenv("HTTP_PROXY", web2.url(""))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = "http://public.example/page"
    db = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=8)
    row = db["pages"].get(url)
    assert row["rendered_at"] is not None, row["render_note"]
    assert sum(web.recorder.hits.values()) == 0, dict(web.recorder.hits)
    assert "hunter2" not in (row["text"] or "")


def test_a_request_that_fails_fails_at_once(tmp_path, web):
    """A rendered page's request that the run's client cannot make (a closed port) fails then,
    not at the render's deadline."""
    from .test_browser import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    url = web.add(
        "/page",
        f"""<html><body><div id=app></div><p>a page</p>
        <script>fetch('http://127.0.0.1:{closed}/api').catch(() => {{ document.body.dataset.failed = 'yes' }})</script></body></html>""".encode(),
    )
    started = time.monotonic()
    db = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=20)
    seconds = time.monotonic() - started
    row = db["pages"].get(url)
    assert row["rendered_at"] is not None and row["render_error"] is None and seconds < 15, (row["render_note"], seconds)
