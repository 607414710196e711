"""Host health: a host that is down fails its whole queue at once; a network that is down
(nothing resolves) leaves the pages pending for the next run; an image host that hangs costs
one timeout."""

from __future__ import annotations

import socket

import pytest

from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .dnsserver import DNSServer
from .helpers import QUICK_ARGS, attempts, db_of, extraction_pool, fetch_urls, page, with_images
from .webserver import PNG, article


def closed_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_offline_run_leaves_its_pages_pending_and_the_next_run_fetches_them(cli, tmp_path, web, monkeypatch):
    names = ["a.test", "b.test", "c.test", "d.test"]
    for name in names:
        web.add(f"/{name}", article(f"来自 {name}"))
    (tmp_path / "mylist.md").write_text("".join(f"- http://{n}:{web.port}/{n}\n" for n in names), encoding="utf-8")
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")  # nothing answers: no network
    result = cli("fetch", "mylist.md", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    last = result.stderr.strip().splitlines()[-1]  # (after a line per page: not a terminal)
    assert "no host name resolved" in last and "4 pages left pending" in last, result.stderr
    assert "pages in" not in result.stderr  # one line, not a summary table of failures
    statuses = {row["url"]: (row["status"], row["error"]) for row in db_of(tmp_path)["pages"].rows}
    assert set(statuses.values()) == {("pending", None)}
    assert sum(web.recorder.hits.values()) == 0

    with DNSServer("127.0.0.1") as dns:  # the network is back: no --retry-failed needed
        dns.zone.addresses.update({name: ["127.0.0.1"] for name in names})
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", "mylist.md", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    assert {row["status"] for row in db_of(tmp_path)["pages"].rows} == {"archived"}, result.output


def test_an_offline_run_of_one_url_or_with_a_resolver_saying_no_such_name_leaves_it_pending(cli, tmp_path, web, monkeypatch):
    """Fewer names than the offline rule counts, or a resolver that says "no such name" to
    everything while offline (some do): nothing was reached, so nothing was really tried."""
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")
    result = cli("fetch", f"http://one.test:{web.port}/post", *QUICK_ARGS)
    assert result.exit_code == 0 and "1 page left pending" in result.stderr, result.output
    assert [row["status"] for row in db_of(tmp_path)["pages"].rows] == ["pending"]
    with DNSServer("127.0.0.1") as dns:  # answers NXDOMAIN for every name
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", f"http://two.test:{web.port}/a", f"http://three.test:{web.port}/b", *QUICK_ARGS)
    assert result.exit_code == 0 and "2 pages left pending" in result.stderr, result.output
    assert {row["status"] for row in db_of(tmp_path)["pages"].rows} == {"pending"}
    assert db_of(tmp_path)["dead_names"].count == 0  # not believed either


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_transient_errors_keep_their_retries(tmp_path, web):
    db, summary = fetch_urls(tmp_path, [web.url("/reset"), web.url("/always-503")], retries=2)
    assert len(attempts(db, web.url("/reset"))) == 3
    assert len(attempts(db, web.url("/always-503"))) == 3
    assert summary.down_hosts == {}


@pytest.mark.hostile
def test_no_host_resolves_is_reported_once_and_pages_stay_pending(tmp_path):
    """Nothing resolved, nothing reached: offline. The pages were never really tried (issue 24)."""
    urls = [f"http://host{i}.invalid/a{j}" for i in range(6) for j in range(3)]
    db, summary = fetch_urls(tmp_path, urls, retries=3, backoff=5.0, delay=5.0)
    assert {(page(db, u)["status"], page(db, u)["error"]) for u in urls} == {("pending", None)}
    assert summary.no_host_resolved and summary.left_pending == len(urls)
    assert all(page(db, u)["attempts"] == 1 for u in urls)


@pytest.mark.hostile
def test_cli_says_once_that_no_host_resolved(tmp_path, cli):
    result = cli("fetch", "http://a.invalid/1", "http://b.invalid/2", "http://a.invalid/3", "--delay", "0")
    assert result.exit_code == 0, result.output
    assert result.output.count("no host name resolved") == 1
    assert "check the network connection or the proxy settings" in result.output


@pytest.mark.hostile
def test_summary_json_lists_down_hosts(tmp_path):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(["http://gone.invalid/1", "http://gone.invalid/2"]))
        summary = run(archive, FetchOptions(delay=0, retries=2), pool=extraction_pool())
    assert summary.as_dict()["down_hosts"] == [{"host": "gone.invalid", "reason": "dns", "pages": 2}]


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_hanging_image_host_uses_the_resource_timeout_and_one_retry(tmp_path, web):
    url = web.add("/hangs", with_images(web.url("/never")))
    db, _ = fetch_urls(tmp_path, [url], retries=3, timeout=20.0, resource_timeout=0.5)
    (row,) = db["resources"].rows
    assert row["status"] == "failed" and row["error"] == "timeout" and "0.5 s" in row["error_message"]
    assert web.recorder.hits["/never"] == 2  # one retry, not three


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_pages_waiting_for_one_image_host_share_one_lookup(tmp_path, web, dns):
    dns.zone.nxdomain.add("cdn.invalid")
    pages = [web.add(f"/shared{i}", with_images(*(f"http://cdn.invalid/{i}/{j}.png" for j in range(3)))) for i in range(6)]
    db, _ = fetch_urls(tmp_path, pages)
    rows = list(db["resources"].rows)
    assert len(rows) == 18 and {r["error"] for r in rows} == {"dns"}
    assert dns.queries["cdn.invalid"] <= 2  # one lookup: A and AAAA


@pytest.mark.hostile
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
