"""Host health, politeness at the server, the resource budget and where requests may go (`pytest -m hostile`)."""

from __future__ import annotations

from datetime import datetime

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .conftest import run_mirror
from .test_fetch import attempts, fetch_urls, page
from .webserver import PNG, article

pytestmark = pytest.mark.hostile

ZH_ARTICLE = (
    "<html><head><title>流水线并行</title></head><body><article><h1>流水线并行</h1>"
    "<p>流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。为了减少设备空闲，微批次被依次送入流水线。</p>"
    "<p>气泡是流水线并行的主要开销：设备在等待上游结果时无事可做。交错调度可以进一步压缩气泡。</p>"
    "{images}</article></body></html>"
)


def with_images(*srcs: str) -> bytes:
    return ZH_ARTICLE.format(images="".join(f'<p><img src="{s}" alt="图"></p>' for s in srcs)).encode()


def test_dead_hosts_fail_their_whole_queue_at_once_without_retries(tmp_path, web):
    refused = [f"http://127.0.0.1:9/p{i}" for i in range(5)]
    unknown = [f"http://no-such-host.invalid/p{i}" for i in range(5)]
    live = [web.url(f"/article/{i}") for i in range(3)]
    db, summary = fetch_urls(tmp_path, refused + unknown + live, retries=3, backoff=5.0, delay=2.0, per_host=1)
    for url in refused:
        assert page(db, url)["error"] == "connect" and page(db, url)["attempts"] == 1
    for url in unknown:
        assert page(db, url)["error"] == "dns" and page(db, url)["attempts"] == 1
        assert "not found" in page(db, url)["error_message"]
    assert {page(db, u)["status"] for u in live} == {"archived"}
    assert summary.down_hosts == {"127.0.0.1:9": ("connect", 5), "no-such-host.invalid": ("dns", 5)}
    assert not summary.no_host_resolved


def test_transient_errors_keep_their_retries(tmp_path, web):
    db, summary = fetch_urls(tmp_path, [web.url("/reset"), web.url("/always-503")], retries=2)
    assert len(attempts(db, web.url("/reset"))) == 3
    assert len(attempts(db, web.url("/always-503"))) == 3
    assert summary.down_hosts == {}


def test_no_host_resolves_is_reported_once_and_pages_stay_pending(tmp_path):
    """Nothing resolved, nothing reached: offline. The pages were never really tried (issue 24)."""
    urls = [f"http://host{i}.invalid/a{j}" for i in range(6) for j in range(3)]
    db, summary = fetch_urls(tmp_path, urls, retries=3, backoff=5.0, delay=5.0)
    assert {(page(db, u)["status"], page(db, u)["error"]) for u in urls} == {("pending", None)}
    assert summary.no_host_resolved and summary.left_pending == len(urls)
    assert all(page(db, u)["attempts"] == 1 for u in urls)


def test_cli_says_once_that_no_host_resolved(tmp_path, cli):
    result = cli("fetch", "http://a.invalid/1", "http://b.invalid/2", "http://a.invalid/3", "--delay", "0")
    assert result.exit_code == 0, result.output
    assert result.output.count("no host name resolved") == 1
    assert "check the network connection or the proxy settings" in result.output


@pytest.mark.parametrize("per_host", [1, 4])
def test_requests_to_one_host_start_delay_apart_at_the_server(tmp_path, web, web2, per_host):
    """`mirror fetch` runs as its own process, so the server's clock is not slowed by the client.
    Two hosts share a concurrency of 2: requests queue for it after passing their host's gate."""
    delay = 0.2
    urls = [server.url(f"/slow/{i}?s=0.1") for i in range(8) for server in (web, web2)]
    args = ["--per-host", str(per_host), "--delay", str(delay), "--concurrency", "2", "--no-images"]
    done = run_mirror("fetch", *urls, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    for server in (web, web2):
        # what the client scheduled, on its own clock: each request after the host's gate let it go
        scheduled = sorted(
            datetime.fromisoformat(r["started_at"]).timestamp()
            for r in db.query("select started_at from attempts where url like ?", [server.url("/slow/") + "%"])
        )
        assert len(scheduled) == 8
        assert min(b - a for a, b in zip(scheduled, scheduled[1:], strict=False)) >= delay * 0.99
        # what the server saw: its thread records a start when it gets to run, which a busy machine
        # delays by up to a few tens of ms (shortening one gap by what it added to the one before);
        # over any two gaps that jitter cancels out
        starts = sorted(t for _, t in server.recorder.starts)
        assert len(starts) == 8
        assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= delay * 0.5
        assert min(c - a for a, c in zip(starts, starts[2:], strict=False)) >= 2 * delay * 0.9


def test_dead_and_hanging_image_hosts_do_not_hold_up_pages(tmp_path, web, web2):
    hanging = "http://127.0.0.3:{}/never"
    pages = []
    for i in range(4):
        pages.append(web.add(f"/a{i}", with_images(f"http://img{i}.invalid/x.png", web2.url(f"/img{i}.png"), "http://127.0.0.1:9/y.png")))
        web2.add(f"/img{i}.png", PNG, content_type="image/png")
    db, summary = fetch_urls(tmp_path, pages, retries=3, backoff=2.0, resource_timeout=1.0)
    assert {page(db, u)["status"] for u in pages} == {"archived"}
    rows = {r["url"]: r for r in db["resources"].rows}
    assert all(rows[web2.url(f"/img{i}.png")]["status"] == "archived" for i in range(4))
    assert {rows[f"http://img{i}.invalid/x.png"]["error"] for i in range(4)} == {"dns"}
    assert rows["http://127.0.0.1:9/y.png"]["error"] == "connect"
    # pages were recorded before any image was asked for
    assert all(page(db, u)["resources_at"] for u in pages)
    assert hanging  # (hanging hosts: see test_hanging_image_host_uses_the_resource_timeout)


def test_hanging_image_host_uses_the_resource_timeout_and_one_retry(tmp_path, web):
    url = web.add("/hangs", with_images(web.url("/never")))
    db, _ = fetch_urls(tmp_path, [url], retries=3, timeout=20.0, resource_timeout=0.5)
    (row,) = db["resources"].rows
    assert row["status"] == "failed" and row["error"] == "timeout" and "0.5 s" in row["error_message"]
    assert web.recorder.hits["/never"] == 2  # one retry, not three


def test_headers_go_only_to_seed_hosts(tmp_path, web, web2):
    web2.add("/elsewhere", article("elsewhere"))
    url = web.add("/jump", b"", status=302, Location=web2.url("/elsewhere"))
    image_page = web.add("/pic", with_images(web2.url("/img.png")))
    web2.add("/img.png", PNG, content_type="image/png")
    fetch_urls(tmp_path, [url, image_page], headers={"Authorization": "Bearer s3cret"})
    assert web.recorder.headers["/jump"][0]["Authorization"] == "Bearer s3cret"
    assert "Authorization" not in web2.recorder.headers["/elsewhere"][0]
    assert "Authorization" not in web2.recorder.headers["/img.png"][0]


def test_header_all_hosts_opts_out(tmp_path, web, web2):
    web2.add("/elsewhere", article("elsewhere"))
    url = web.add("/jump", b"", status=302, Location=web2.url("/elsewhere"))
    fetch_urls(tmp_path, [url], headers={"Authorization": "Bearer s3cret"}, header_all_hosts=True)
    assert web2.recorder.headers["/elsewhere"][0]["Authorization"] == "Bearer s3cret"


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


def test_a_loopback_page_may_show_loopback_images(tmp_path, web, web2):
    url = web.add("/local", with_images(web2.url("/img.png")))
    web2.add("/img.png", PNG, content_type="image/png")
    db, _ = fetch_urls(tmp_path, [url])
    (row,) = db["resources"].rows
    assert row["status"] == "archived"


def test_summary_json_lists_down_hosts(tmp_path):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(["http://gone.invalid/1", "http://gone.invalid/2"]))
        summary = run(archive, FetchOptions(delay=0, retries=2))
    assert summary.as_dict()["down_hosts"] == [{"host": "gone.invalid", "reason": "dns", "pages": 2}]


def test_a_hanging_image_host_costs_one_timeout(tmp_path, web):
    from .webserver import HostileServer

    with HostileServer("127.0.0.3") as hangs:
        images = [hangs.url(f"/never?i={i}") for i in range(4)]
        url = web.add("/hang-host", with_images(*images))
        db, summary = fetch_urls(tmp_path, [url], retries=3, resource_timeout=0.5, per_host=2)
        # a page's images are asked for together: those in flight when the first timed out
        # (the per-host limit) hang once; no retries, and the other two are never sent
        assert 1 <= hangs.recorder.hits["/never"] <= 2
    rows = {r["url"]: r for r in db["resources"].rows}
    assert {rows[i]["error"] for i in images} == {"timeout"}
    assert page(db, url)["status"] == "archived"


def test_pages_waiting_for_one_image_host_share_one_lookup(tmp_path, web, dns):
    dns.zone.nxdomain.add("cdn.invalid")
    pages = [web.add(f"/shared{i}", with_images(*(f"http://cdn.invalid/{i}/{j}.png" for j in range(3)))) for i in range(6)]
    db, _ = fetch_urls(tmp_path, pages)
    rows = list(db["resources"].rows)
    assert len(rows) == 18 and {r["error"] for r in rows} == {"dns"}
    assert dns.queries["cdn.invalid"] <= 2  # one lookup: A and AAAA


def test_an_image_host_whose_lookup_never_answers_costs_one_resource_timeout(tmp_path, web, dns):
    dns.zone.addresses["cdn.test"] = ["127.0.0.1"]
    dns.zone.late["cdn.test"] = 3.0  # answered only after 3 s
    pages = [web.add(f"/slowdns{i}", with_images(f"http://cdn.test/{i}.png", web.url(f"/img{i}.png"))) for i in range(3)]
    for i in range(3):
        web.add(f"/img{i}.png", PNG, content_type="image/png")
    db, summary = fetch_urls(tmp_path, pages, resource_timeout=0.5)
    rows = {r["url"]: r for r in db["resources"].rows}
    # the first lookup's wait ran out: the host is down for the run, every image of it says why
    assert {rows[f"http://cdn.test/{i}.png"]["error"] for i in range(3)} == {"dns"}
    assert all("within 0.5 s" in rows[f"http://cdn.test/{i}.png"]["error_message"] for i in range(3))
    assert summary.down_hosts == {}  # pages' hosts all answered
    assert {rows[web.url(f"/img{i}.png")]["status"] for i in range(3)} == {"archived"}
    assert {page(db, u)["status"] for u in pages} == {"archived"}


def test_a_resource_many_pages_share_is_asked_for_once_a_run(tmp_path, web, web2):
    """Pages of one site arrive together and link the same stylesheet and logo: each is asked
    for once (while in flight, or after it failed for good), and every page keeps its row."""
    web2.add("/logo.png", PNG, content_type="image/png")
    shared = [web2.url("/logo.png"), web2.url("/missing.png"), web2.url("/gone")]
    pages = [web.add(f"/same-site/{i}", with_images(*shared, web2.url("/always-503"))) for i in range(6)]
    db, _ = fetch_urls(tmp_path, pages, resource_retries=0, concurrency=8)
    assert {page(db, u)["status"] for u in pages} == {"archived"}
    assert web2.recorder.hits["/logo.png"] == 1
    assert web2.recorder.hits["/missing.png"] == 1
    assert web2.recorder.hits["/gone"] == 1
    assert 1 <= web2.recorder.hits["/always-503"] <= 6  # shared while in flight, else asked again (below)
    rows = list(db.query("select page_url, url, status, error from resources"))
    for u in pages:
        mine = {r["url"]: (r["status"], r["error"]) for r in rows if r["page_url"] == u}
        assert mine[web2.url("/missing.png")] == ("failed", "http_404")
        assert mine[web2.url("/gone")] == ("failed", "http_410")
        assert mine[web2.url("/always-503")][0] == "failed"
    assert sum(r["url"] == web2.url("/logo.png") and r["status"] == "archived" for r in rows) >= 1


def _fetch_for_pages(tmp_path, *rounds):
    """`fetch_images` for pages, with one run's `Seen`: the pages of a round at once, the
    rounds one after the other. Each page is (urls, reach); returns each round's outcomes."""
    import asyncio

    from mirror.fetch.resources import Seen, fetch_images
    from mirror.http import Budget, Client
    from mirror.warc import CaptureWriter

    async def go():
        writer = CaptureWriter(tmp_path)
        client = Client(
            writer,
            concurrency=8,
            per_host=4,
            delay=0,
            timeout=5,
            max_bytes=1_000_000,
            max_redirects=3,
            headers={"User-Agent": "mirror-test"},
            cookies=None,
        )
        budget, seen = Budget(timeout=3, retries=0, concurrency=8), Seen(set())
        try:
            return [await asyncio.gather(*(fetch_images(client, budget, urls, reach, seen) for urls, reach in pages)) for pages in rounds]
        finally:
            await client.aclose()
            writer.close()

    return asyncio.run(go())


def test_a_failure_a_retry_may_mend_is_asked_for_again_by_the_next_page(tmp_path, web):
    from mirror.http import Reach

    urls = [web.url("/missing.png"), web.url("/always-503"), web.add("/logo.png", PNG, content_type="image/png")]
    [first], [second] = _fetch_for_pages(tmp_path, [(urls, Reach.LOOPBACK)], [(urls, Reach.LOOPBACK)])
    assert [(e.status, e.ok) for e in first] == [(404, False), (503, False), (200, True)]
    assert [e.status for e in second] == [404, 503]  # the archived logo is not asked for, nor returned
    assert web.recorder.hits["/missing.png"] == 1  # failed for good: its outcome again
    assert web.recorder.hits["/always-503"] == 2
    assert web.recorder.hits["/logo.png"] == 1


def test_pages_asking_at_once_share_one_request_if_they_may_fetch_alike(tmp_path, web):
    """A slow stylesheet three pages link at once is asked for once, and all three get its
    outcome; a page on a public address may not fetch from loopback, so it does not share
    the loopback pages' answer (nor they its refusal)."""
    from mirror.http import Reach

    slow = web.url("/slow/shared.css?s=0.5")
    [a, b, c, public] = _fetch_for_pages(tmp_path, [([slow], Reach.LOOPBACK)] * 3 + [([slow], Reach.PUBLIC)])[0]
    assert web.recorder.hits["/slow/shared.css"] == 1
    assert [x[0].status for x in (a, b, c)] == [200] * 3
    assert public[0].error == "private_address"
