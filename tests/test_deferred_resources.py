"""Resources a run could not finish (issue 42 item 3): an image whose host name had no answer
when the run ended is recorded with a backoff and asked for again only once it has passed, an
image that failed is not asked for again by every run, and a rerun with nothing new to do asks
nothing and says one line. Servers on 127.0.0.x, the resolver the test's own."""

from __future__ import annotations

import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive
from mirror.store.writers import DEFERRED_BACKOFF

from .webserver import PNG, article

FAST = dict(delay=0, timeout=5, retries=0, workers=1, resource_timeout=30, tail_grace=0.3)


def with_images(*srcs: str) -> bytes:
    return article("带图的文章", "".join(f'<img src="{s}" alt="图">' for s in srcs))


def fetch(tmp_path, urls, **options):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(archive, FetchOptions(**{**FAST, **options}))
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db"), summary


def due_now(db) -> None:
    """As if the deferred resources' backoff had passed."""
    db.execute("update resources set retry_at = '2000-01-01T00:00:00+00:00' where retry_at is not null")
    db.conn.commit()


def test_a_deferred_image_waits_its_backoff_and_a_failed_one_is_not_asked_again(tmp_path, web, dns):
    dns.zone.dropped.add("slow-cdn.test")  # no answer at all
    slow = f"http://slow-cdn.test:{web.port}/img.png"
    web.add("/img.png", PNG, content_type="image/png")
    url = web.add("/pictured", with_images(slow, web.url("/img.png"), web.url("/missing.png")))
    db, summary = fetch(tmp_path, [url])
    assert summary.deferred == 1 and summary.resources.asked == 3
    rows = {r["url"]: r for r in db.query("select * from resources")}
    assert (rows[slow]["error"], rows[slow]["tries"]) == ("deferred", 1) and rows[slow]["retry_at"]
    assert rows[web.url("/missing.png")]["error"] == "http_404"
    assert db["pages"].get(url)["resources_at"] is not None
    asked, hits = dns.queries["slow-cdn.test"], dict(web.recorder.hits)

    db, summary = fetch(tmp_path, [url])  # a rerun right after: nothing to ask, nothing asked
    assert (summary.total, summary.images_resumed, summary.deferred_due, summary.resources.asked) == (0, 0, 0, 0)
    assert dns.queries["slow-cdn.test"] == asked and dict(web.recorder.hits) == hits

    due_now(db)
    dns.zone.dropped.discard("slow-cdn.test")
    dns.zone.addresses["slow-cdn.test"] = ["127.0.0.1"]
    db, summary = fetch(tmp_path, [url])  # its time has come: it alone is asked for again
    assert summary.deferred_due == 1 and summary.resources.asked == 1 and summary.deferred == 0
    assert web.recorder.hits["/missing.png"] == hits["/missing.png"]
    row = db["resources"].get((url, slow))
    assert (row["status"], row["error"], row["retry_at"]) == ("archived", None, None)


def test_a_name_that_never_answers_is_given_up_after_its_backoffs(tmp_path, web, dns):
    dns.zone.dropped.add("never.test")
    never = f"http://never.test:{web.port}/img.png"
    url = web.add("/waits", with_images(never))
    db, _ = fetch(tmp_path, [url])
    waits = []
    for _ in DEFERRED_BACKOFF:
        row = db["resources"].get((url, never))
        waits.append(row["tries"])
        due_now(db)
        db, _ = fetch(tmp_path, [url])
    assert waits == list(range(1, len(DEFERRED_BACKOFF) + 1))  # each deferral counted, each backoff longer
    row = db["resources"].get((url, never))
    assert (row["status"], row["error"], row["retry_at"]) == ("failed", "dns", None)
    assert "no answer" in row["error_message"] and "--refresh" in row["error_message"]
    due_now(db)
    _, summary = fetch(tmp_path, [url])
    assert summary.resources.asked == 0


def test_images_an_interrupted_run_left_are_asked_for_once(tmp_path, web):
    """A stop between a page and its images: the next run asks for them; the run after asks for
    nothing (it used to ask again, each time, for every image not archived)."""
    web.add("/a.png", PNG, content_type="image/png")
    url = web.add("/stopped", with_images(web.url("/a.png"), web.url("/gone.png")))
    db, _ = fetch(tmp_path, [url])
    db.execute("delete from resources")  # what a stop before the page's resources were recorded leaves
    db.execute("update pages set resources_at = null")
    db.conn.commit()
    db, summary = fetch(tmp_path, [url])
    assert summary.images_resumed == 1 and summary.resources.asked == 2  # (neither was recorded: both are asked again)
    assert web.recorder.hits["/gone.png"] == 2
    db, summary = fetch(tmp_path, [url])
    assert summary.images_resumed == 0 and summary.resources.asked == 0 and web.recorder.hits["/gone.png"] == 2


def test_a_rerun_with_nothing_to_do_says_one_line(cli, tmp_path, web, dns):
    dns.zone.dropped.add("slow-cdn.test")
    url = web.add("/one", with_images(f"http://slow-cdn.test:{web.port}/x.png"))
    (tmp_path / "list.md").write_text(f"- {url}\n", encoding="utf-8")
    first = cli("fetch", "list.md", "--delay", "0", "--retries", "0", "--workers", "1")
    assert first.exit_code == 0 and "images deferred" in first.stderr, first.stderr
    again = cli("fetch", "list.md", "--delay", "0", "--retries", "0", "--workers", "1")
    assert again.exit_code == 0
    assert again.stderr.strip().splitlines() == [
        "nothing to fetch: every page this reading list links (1) was fetched before "
        "(--retry-failed tries the failed ones again, --refresh re-checks them all)"
    ]
