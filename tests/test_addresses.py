"""Where requests may go: a public page (here, through a proxy) cannot make mirror or its browser
request this machine or a private address, by a redirect, a navigation, an image, a name that
rebinds, or a proxy setting read otherwise than httpx reads it; a page on this machine may."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading

import pytest

from mirror.http import Budget, Reach

from .browsersite import TIMEOUT
from .dnsserver import DNSServer
from .helpers import CHROMIUM, chromium_or_skip, client_for, extraction_pool, fetch, fetch_urls, page, with_images
from .webserver import PNG


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


def public_page(web, allow_private: bool, tmp_path, monkeypatch):
    """A page that comes through a proxy as a public site; its script, image and WebSocket ask this machine.
    Every request of the render goes through the run's client, which applies the address rule."""
    admin = web.url("/internal-admin?action=reboot")
    body = (
        "<html><head><title>Public article</title></head><body><article><h1>Public article</h1>"
        + "<p>A public article with enough words in it to be read as an article by the extractor, "
        "written about nothing in particular but long enough to count.</p>"
        * 4
        + f'<img src="{web.url("/internal-picture.png")}"></article>'
        + f"<script>fetch({json.dumps(admin)}).catch(() => {{}});"
        + f"try {{ new WebSocket({json.dumps(web.url('/internal-socket').replace('http', 'ws', 1))}); }} catch (e) {{}}</script></body></html>"
    ).encode()
    web.add("/public-article", body)
    web.add("/internal-admin", b"rebooted", content_type="text/plain")
    monkeypatch.setenv("HTTP_PROXY", web.url(""))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = "http://public.example/public-article"
    db, _ = fetch_urls(tmp_path, [url], allow_private=allow_private, images=False, browser="always", chromium=CHROMIUM, timeout=TIMEOUT)
    return db["pages"].get(url)


@pytest.mark.hostile
@pytest.mark.parametrize("allow_private", [False, True])
def test_a_public_page_cannot_make_us_request_loopback(tmp_path, web, monkeypatch, allow_private):
    """The page comes through a proxy as a public site; its image points at this machine."""
    admin = web.url("/internal-admin?action=reboot")
    web.add("/public-article", with_images(admin, "http://127.0.0.1:1/x.png"))
    monkeypatch.setenv("HTTP_PROXY", web.url(""))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = "http://public.example/public-article"
    db, _ = fetch_urls(tmp_path, [url], allow_private=allow_private)
    assert page(db, url)["status"] == "archived"
    rows = {r["url"]: r for r in db["resources"].rows}
    if allow_private:
        assert web.recorder.hits["/internal-admin"] == 1
    else:
        assert web.recorder.hits["/internal-admin"] == 0
        assert rows[admin]["status"] == "failed" and rows[admin]["error"] == "private_address"
        assert "--allow-private" in rows[admin]["error_message"]


@pytest.mark.hostile
def test_a_loopback_page_may_show_loopback_images(tmp_path, web, web2):
    url = web.add("/local", with_images(web2.url("/img.png")))
    web2.add("/img.png", PNG, content_type="image/png")
    db, _ = fetch_urls(tmp_path, [url])
    (row,) = db["resources"].rows
    assert row["status"] == "archived"


def test_a_page_past_the_reach_it_is_given_is_refused(tmp_path, web):
    from mirror.fetch import FetchOptions, run
    from mirror.http.gate import Reach
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    from .webserver import article

    url = web.add("/intranet", article("内网", "只在本机上的页面。"))
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url]))
        run(archive, FetchOptions(delay=0, retries=0, page_reach=int(Reach.PUBLIC)), pool=extraction_pool())
        row = archive.db["pages"].get(url)
    assert (row["status"], row["error"]) == ("failed", "private_address") and web.recorder.hits["/intranet"] == 0


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_a_connection_goes_to_the_address_that_was_checked(tmp_path, web, monkeypatch):
    from .dnsserver import DNSServer
    from .helpers import with_images
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


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_a_no_proxy_entry_with_a_port_is_read_as_httpx_reads_it(tmp_path, web, proxy_env):
    """NO_PROXY `intranet.test:PORT`: httpx connects directly, so the name is looked up and
    checked (the standard library's reading would have called it proxied and unchecked)."""
    web.add("/secret.png", PNG, content_type="image/png")
    web.add("/page", with_images(f"http://intranet.test:{web.port}/secret.png"))
    proxy_env.setenv("NO_PROXY", f"127.0.0.1,intranet.test:{web.port}")
    db, _ = fetch(tmp_path, ["http://public.example/page"], concurrency=1, resource_timeout=5)
    assert web.recorder.hits.get("/secret.png", 0) == 0
    assert {row["error"] for row in db["resources"].rows} == {"private_address"}


@pytest.mark.hostile
def test_a_name_checked_as_proxied_for_http_is_looked_up_for_https(tmp_path, web, proxy_env):
    """HTTP_PROXY and no HTTPS_PROXY: `intranet.test` over http goes through the proxy (no check
    here), over https directly: that one is looked up and refused."""
    port, seen = _listener()
    web.add("/one", with_images(f"http://intranet.test:{web.port}/a.png"))
    web.add("/two", with_images(f"https://intranet.test:{port}/b.png"))
    proxy_env.setenv("NO_PROXY", "127.0.0.1")
    db, _ = fetch(tmp_path, ["http://public.example/one", "http://public.example/two"], concurrency=1, resource_timeout=5)
    assert seen == []  # no connection to this machine's port
    row = db["resources"].get(("http://public.example/two", f"https://intranet.test:{port}/b.png"))
    assert row["error"] == "private_address"


@pytest.mark.slow
@pytest.mark.parametrize("allow_private", [False, True])
def test_a_public_page_rendered_cannot_make_the_browser_request_loopback(tmp_path, web, monkeypatch, allow_private):
    chromium_or_skip()
    page = public_page(web, allow_private, tmp_path, monkeypatch)
    assert page["rendered_at"] is not None and page["screenshot_warc_file"], page["render_note"]
    assert web.recorder.hits["/public-article"] == 0  # asked through the proxy, as a public site
    assert web.recorder.hits["/internal-socket"] == 0  # a WebSocket cannot wait at a gate: never opened
    assert "1 WebSocket refused" in page["render_note"]
    if allow_private:
        assert web.recorder.hits["/internal-admin"] == 1
        assert web.recorder.hits["/internal-picture.png"] == 1
        assert "private" not in (page["render_note"] or "")
    else:
        assert web.recorder.hits["/internal-admin"] == 0
        assert web.recorder.hits["/internal-picture.png"] == 0
        assert "2 requests to more private addresses than the page's refused (--allow-private to allow)" in page["render_note"]


@pytest.mark.slow
def test_a_loopback_page_rendered_may_request_loopback(tmp_path, web):
    chromium_or_skip()
    web.add("/internal-admin", b"fine", content_type="text/plain")
    url = web.add("/local", b"<html><body><p>local</p><script>fetch('/internal-admin')</script></body></html>")
    db, _ = fetch_urls(tmp_path, [url], images=False, browser="always", chromium=CHROMIUM, timeout=TIMEOUT)
    assert db["pages"].get(url)["rendered_at"] is not None
    assert web.recorder.hits["/internal-admin"] == 1


@pytest.mark.slow
@pytest.mark.hostile
def test_a_rendered_public_page_that_navigates_to_loopback_keeps_nothing_of_it(tmp_path, web, monkeypatch):
    from .helpers import CHROMIUM, chromium_or_skip

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


@pytest.mark.slow
@pytest.mark.hostile
def test_a_navigation_is_refused_before_its_redirect_reaches_a_more_private_address(tmp_path, web, web2, monkeypatch):
    """A rendered page's navigation is fetched by the run's client, its redirects hop by hop, each
    checked before it is asked for: a public page (through a proxy) that navigates to a redirect
    to this machine (127.0.0.2) never reaches it."""
    from .helpers import CHROMIUM, chromium_or_skip

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


@pytest.mark.slow
@pytest.mark.hostile
def test_localhost_names_are_this_machine_in_the_browser(tmp_path, web, web2, monkeypatch):
    """chromium would answer `*.localhost` itself (127.0.0.1), whatever mirror's resolver says; a
    rendered page's requests go through the run's client instead, which knows such a name for
    this machine: a public page (through a proxy) cannot reach it through one."""
    from .helpers import CHROMIUM, chromium_or_skip

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
    db, _ = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=8, concurrency=1, resource_timeout=5)
    row = db["pages"].get(url)
    assert row["rendered_at"] is not None, row["render_note"]
    assert sum(web.recorder.hits.values()) == 0, dict(web.recorder.hits)
    assert "hunter2" not in (row["text"] or "")
