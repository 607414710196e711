"""Politeness: requests to one host go one at a time or --per-host at once, --delay apart (measured at
the server), a page's own images wait at its host's gate, a slow host holds up no other, and the
hosts that are slow are told from our own waits."""

from __future__ import annotations

from datetime import datetime

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, Summary, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .helpers import assert_client_spaced, assert_spaced, extraction_pool, fetch_urls, page, run_mirror, with_images
from .webserver import PNG, article


def test_per_host_limit_is_respected(tmp_path, web):
    urls = [web.url(f"/slow/{i}?s=0.3") for i in range(6)]
    db, _ = fetch_urls(tmp_path, urls, per_host=2, concurrency=16)
    assert web.recorder.max_in_flight == 2
    assert {page(db, u)["status"] for u in urls} == {"archived"}


def test_delay_between_requests_to_one_host(tmp_path, web):
    urls = [web.url(f"/article/d{i}") for i in range(4)]
    db, _ = fetch_urls(tmp_path, urls, per_host=2, delay=0.3)
    # when the client let each request go, on its own clock: the server of an in-process run records
    # a start when its thread gets to run, late by as long as the client holds it up on a busy machine
    # (test_requests_to_one_host_start_delay_apart_at_the_server measures at the server)
    scheduled = sorted(datetime.fromisoformat(r["started_at"]).timestamp() for r in db.query("select started_at from attempts"))
    assert len(scheduled) == 4
    assert all(b - a >= 0.3 * 0.99 for a, b in zip(scheduled, scheduled[1:], strict=False))


def test_a_slow_host_does_not_hold_up_others(tmp_path, web, web2):
    slow = [web2.url(f"/slow/{i}?s=2") for i in range(3)]
    fast = [web.url(f"/article/f{i}") for i in range(6)]
    fetch_urls(tmp_path, slow + fast, per_host=1, concurrency=4)
    first_slow_done = min(t for p, t in web2.recorder.finishes)
    last_fast_done = max(t for p, t in web.recorder.finishes)
    assert last_fast_done < first_slow_done


@pytest.mark.hostile
@pytest.mark.parametrize("per_host", [1, 4])
def test_requests_to_one_host_start_delay_apart_at_the_server(tmp_path, web, web2, per_host):
    """`mirror fetch` runs as its own process, so the server's clock is not slowed by the client.
    Two hosts share a concurrency of 2: requests queue for it after passing their host's gate."""
    delay = 0.4
    urls = [server.url(f"/slow/{i}?s=0.1") for i in range(8) for server in (web, web2)]
    args = ["--per-host", str(per_host), "--delay", str(delay), "--concurrency", "2", "--no-images"]
    done = run_mirror("fetch", *urls, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    for server in (web, web2):
        assert db.execute("select count(*) from attempts where url like ?", [server.url("/slow/") + "%"]).fetchone()[0] == 8
        assert_client_spaced(tmp_path / "archive" / "mirror.db", server.url("/slow/"), delay)  # each after the host's gate let it go
        starts = [t for _, t in server.recorder.starts]  # what the server saw, on a clock a busy machine makes jitter
        assert len(starts) == 8
        assert_spaced(starts, delay)


def test_a_pages_own_images_wait_at_its_hosts_gate(tmp_path, web):
    """However the page writes its host (`127.0.0.1:port`, `127.0.0.1:port` with user info, the
    default port spelled out), its images and the page are one server's requests, `--delay` apart."""
    delay = 0.4
    for i in range(6):
        web.add(f"/own{i}.png", PNG, content_type="image/png")
    host = f"127.0.0.1:{web.port}"
    images = [
        f"http://{host}/own0.png",
        f"http://user@{host}/own1.png",
        f"http://{host.upper()}/own2.png",
        *(f"http://{host}/own{i}.png" for i in range(3, 6)),
    ]
    url = web.add("/own-page", with_images(*images))
    done = run_mirror("fetch", url, "--delay", str(delay), "--retries", "0", "--workers", "1", cwd=tmp_path)  # (a process of its own, as above)
    assert done.returncode == 0, done.stderr
    starts = [t for _, t in web.recorder.starts]
    assert len(starts) == 7
    assert_spaced(starts, delay)


def test_slow_hosts_are_slow_servers_not_our_politeness(tmp_path, web, web2):
    web.add("/hop", b"", status=302, Location="/landing")  # its second request waits our 1 s at the gate
    web.add("/landing", article("落地"))
    quick = [web.add(f"/q{n}", article(f"快 {n}")) for n in range(3)]
    slow = [web2.url(f"/slow/{n}?s=1.2") for n in range(2)]
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([web.url("/hop"), *quick, *slow]))
        summary = run(archive, FetchOptions(delay=1.0, per_host=1, retries=0, workers=1, images=False), pool=extraction_pool())
    assert [host for host, _, _ in summary.slowest_hosts()] == [f"127.0.0.2:{web2.port}"]
    assert max(summary.host_seconds[f"127.0.0.1:{web.port}"]) < 0.5  # the redirect's politeness wait left out


def test_a_host_answering_at_once_is_never_slow():
    summary = Summary()
    summary.host_seconds["fast.example"] = [0.01, 0.02]
    summary.host_seconds["slow.example"] = [1.5, 2.5]
    assert [host for host, _, _ in summary.slowest_hosts()] == ["slow.example"]
