"""The resolver (issue 25): dead names remembered across runs, a run's end bounded when names get
no answer, image hosts looked up ahead, MIRROR_NAMESERVERS read as written, a lookup inside the
page's timeout."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from mirror.http.resolver import nameservers_from_env

from .dnsserver import DNSServer
from .helpers import client_for, fetch, with_images
from .webserver import PNG, article


@contextlib.asynccontextmanager
async def looking_ahead(folder, timeout: float = 5):
    """A client that looks a page's resource hosts up when its HTML arrives, writing to `folder`."""
    from mirror.http import Client
    from mirror.warc import CaptureWriter

    writer = CaptureWriter(folder)
    client = Client(
        writer,
        concurrency=8,
        per_host=4,
        delay=0,
        timeout=timeout,
        max_bytes=1_000_000,
        max_redirects=3,
        headers={"User-Agent": "mirror-test"},
        cookies=None,
        look_ahead=True,
    )
    try:
        yield client
    finally:
        await client.aclose()
        writer.close()


def test_a_name_that_did_not_exist_is_not_asked_again_by_the_next_run(tmp_path, web, dns):
    """(The pages are on a name the resolver answers: a resolver that never gave a name its
    addresses may be an offline one saying "no such name" to everything, and is not remembered.)"""
    dns.zone.nxdomain.add("gone-cdn.test")
    dns.zone.addresses["site.test"] = ["127.0.0.1"]
    first = web.add("/first", with_images("http://gone-cdn.test/a.png")).replace("127.0.0.1", "site.test")
    fetch(tmp_path, [first])
    asked = dns.queries["gone-cdn.test"]
    assert asked >= 1
    second = web.add("/second", with_images("http://gone-cdn.test/b.png")).replace("127.0.0.1", "site.test")
    db, _ = fetch(tmp_path, [second])
    assert dns.queries["gone-cdn.test"] == asked  # not one query more
    row = db["resources"].get((second, "http://gone-cdn.test/b.png"))
    assert row["error"] == "dns" and "--refresh" in row["error_message"]
    fetch(tmp_path, [second], refresh=True)  # --refresh asks again
    assert dns.queries["gone-cdn.test"] > asked


def test_names_without_an_answer_are_deferred_and_a_later_run_asks_again(tmp_path, web, dns):
    dns.zone.dropped.add("slow-cdn.test")  # no answer at all
    web.add("/img.png", PNG, content_type="image/png")
    url = web.add("/waiting", with_images(f"http://slow-cdn.test:{web.port}/img.png", web.url("/img.png")))
    db, summary = fetch(tmp_path, [url], resource_timeout=30)
    assert summary.deferred == 1
    assert summary.tail_seconds < 30  # the run did not wait for the resource timeout
    rows = {r["url"]: r for r in db["resources"].rows}
    deferred = rows[f"http://slow-cdn.test:{web.port}/img.png"]  # not failed: deferred, asked again after a backoff
    assert (deferred["status"], deferred["error"], deferred["tries"]) == ("failed", "deferred", 1) and deferred["retry_at"]
    assert rows[web.url("/img.png")]["status"] == "archived"
    dns.zone.dropped.discard("slow-cdn.test")
    dns.zone.addresses["slow-cdn.test"] = ["127.0.0.1"]
    db.execute("update resources set retry_at = '2000-01-01T00:00:00+00:00' where retry_at is not null")  # (its backoff passed)
    db.conn.commit()
    db, summary = fetch(tmp_path, [], resource_timeout=30)
    assert summary.deferred_due == 1 and summary.deferred == 0
    assert db["resources"].get((url, f"http://slow-cdn.test:{web.port}/img.png"))["status"] == "archived"
    assert db["pages"].get(url)["resources_at"] is not None


def test_a_pages_image_hosts_are_looked_up_as_soon_as_its_html_arrives(tmp_path, web, dns):
    """Issue 25 item 2: the names a page's images and stylesheets are on are asked for when its
    HTML arrives (while it is extracted), once; names it only links to, or its scripts' with no
    `src`-like attribute, are not. A failed early lookup is the resource's outcome, not a second wait."""
    import asyncio

    from mirror.http import Budget, Reach

    for name in ("early-cdn.test", "style-cdn.test", "lazy-cdn.test", "linked-site.test", "canon-site.test"):
        dns.zone.addresses[name] = ["127.0.0.1"]
    dns.zone.nxdomain.add("gone-cdn.test")
    web.add("/img.png", PNG, content_type="image/png")
    port = web.port
    url = web.add(
        "/early",
        article(
            "早",
            f'<img src="http://early-cdn.test:{port}/img.png" alt="x">'
            f'<img data-actualsrc="//lazy-cdn.test:{port}/img.png">'
            f'<img src="http://gone-cdn.test:{port}/img.png">'
            f'<a href="http://linked-site.test/elsewhere">elsewhere</a>',
        ).replace(
            b"<head>",
            f'<head><link rel="stylesheet" href="http://style-cdn.test:{port}/s.css">'
            f'<link rel="canonical" href="http://canon-site.test/early">'.encode(),
        ),
    )

    async def go():
        async with looking_ahead(tmp_path) as client:
            page = await client.get(url)
            assert page.ok
            for _ in range(100):  # no image requested yet: the lookups started with the page's HTML
                if all(dns.queries[n] for n in ("early-cdn.test", "style-cdn.test", "lazy-cdn.test", "gone-cdn.test")):
                    break
                await asyncio.sleep(0.02)
            asked = dict(dns.queries)
            budget = Budget(timeout=3, retries=0, concurrency=8)
            image = await client.get(f"http://early-cdn.test:{port}/img.png", budget=budget, reach=Reach.LOOPBACK)
            gone = await client.get(f"http://gone-cdn.test:{port}/img.png", budget=budget, reach=Reach.LOOPBACK)
            return asked, image, gone

    asked, image, gone = asyncio.run(go())
    for name in ("early-cdn.test", "style-cdn.test", "lazy-cdn.test", "gone-cdn.test"):
        assert asked.get(name), f"{name} was not looked up when the page's HTML arrived"
    assert not asked.get("linked-site.test") and not asked.get("canon-site.test")  # links to pages are not fetched
    assert image.ok and image.status == 200
    assert dns.queries["early-cdn.test"] == asked["early-cdn.test"]  # the request used the early answer
    assert gone.error == "dns" and dns.queries["gone-cdn.test"] == asked["gone-cdn.test"]


def test_a_page_naming_thousands_of_hosts_gets_only_the_first_few_looked_up_ahead(tmp_path, web, dns):
    import asyncio
    import time

    from mirror.http.lookups import LOOK_AHEAD

    url = web.add("/many", article("多", "".join(f'<img src="http://h{i}.many.test/{i}.png">' for i in range(500))))

    async def go():
        async with looking_ahead(tmp_path) as client:
            assert (await client.get(url)).ok
            end = time.monotonic() + 3
            while sum(1 for n in dns.queries if n.endswith(".many.test")) < LOOK_AHEAD and time.monotonic() < end:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)

    asyncio.run(go())
    asked = {n for n in dns.queries if n.endswith(".many.test")}
    assert asked == {f"h{i}.many.test" for i in range(LOOK_AHEAD)}  # the first ones, once each


def test_a_failed_lookup_ahead_is_not_held_against_a_page_on_that_host(tmp_path, web, dns):
    """The early lookup of an image host got no answer; later the host's name answers and a
    page on it is fetched: the page asks again (only the page's images took the early failure)."""
    import asyncio

    from mirror.http import Reach

    dns.zone.dropped.add("later.test")
    url = web.add("/with-later", article("晚", f'<img src="http://later.test:{web.port}/x.png">'))
    post = web.add("/post-on-later", article("后来"))

    async def go():
        async with looking_ahead(tmp_path, timeout=15) as client:
            assert (await client.get(url)).ok
            while "later.test" not in client.lookups._failed_names:  # the resolver gives up (c-ares' tries)
                await asyncio.sleep(0.1)
            dns.zone.dropped.discard("later.test")
            dns.zone.addresses["later.test"] = ["127.0.0.1"]
            on_later = post.replace("127.0.0.1", "later.test")
            where = await client.reach_of(on_later)  # as the images of a resumed page, or the browser, ask
            return where, await client.get(on_later)

    where, page = asyncio.run(asyncio.wait_for(go(), 30))
    assert where == Reach.LOOPBACK, where
    assert page.ok and page.status == 200, page.message


def test_looking_ahead_is_off_only_where_a_proxy_looks_names_up(tmp_path, monkeypatch):
    import asyncio

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def looks_ahead() -> bool:
        async with looking_ahead(tmp_path) as client:
            return client.lookups._look_ahead

    monkeypatch.setenv("NO_PROXY", "*")  # names no proxy
    assert asyncio.run(looks_ahead())
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert not asyncio.run(looks_ahead())


@pytest.mark.hostile
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


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("value", "servers"), [("[::1]:5353", ["[::1]:5353"]), ("127.0.0.1:53, 10.0.0.1", ["127.0.0.1:53", "10.0.0.1"]), ("::1", ["::1"])]
)
def test_nameservers_are_read_as_written(monkeypatch, value, servers):
    monkeypatch.setenv("MIRROR_NAMESERVERS", value)
    assert nameservers_from_env() == servers


@pytest.mark.hostile
@pytest.mark.parametrize("value", [" , ", "dns.example", "127.0.0.1:99999", "[::1]x"])
def test_a_bad_nameservers_value_is_a_clear_error(cli, monkeypatch, value):
    monkeypatch.setenv("MIRROR_NAMESERVERS", value)
    result = cli("fetch", "https://example.com/")
    assert result.exit_code == 2
    assert "MIRROR_NAMESERVERS" in result.stderr and "Traceback" not in result.output
