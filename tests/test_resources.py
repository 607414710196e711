"""A page's resources (images, stylesheets) in a run: each asked for once a run however many pages
share it, asked again only when a retry may mend it; the page itself is never one; a bad
redirect of one never poisons a later run."""

from __future__ import annotations

import pytest

from mirror.store import Archive

from .helpers import fetch, fetch_urls, page, run_mirror, with_images
from .webserver import PNG, article


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


@pytest.mark.hostile
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


@pytest.mark.hostile
def test_a_failure_a_retry_may_mend_is_asked_for_again_by_the_next_page(tmp_path, web):
    from mirror.http import Reach

    urls = [web.url("/missing.png"), web.url("/always-503"), web.add("/logo.png", PNG, content_type="image/png")]
    [first], [second] = _fetch_for_pages(tmp_path, [(urls, Reach.LOOPBACK)], [(urls, Reach.LOOPBACK)])
    assert [(e.status, e.ok) for e in first] == [(404, False), (503, False), (200, True)]
    assert [e.status for e in second] == [404, 503]  # the archived logo is not asked for, nor returned
    assert web.recorder.hits["/missing.png"] == 1  # failed for good: its outcome again
    assert web.recorder.hits["/always-503"] == 2
    assert web.recorder.hits["/logo.png"] == 1


@pytest.mark.hostile
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


def test_a_reference_to_the_page_itself_is_never_fetched(tmp_path, web):
    page = article(
        "自指",
        '<svg><rect style="clip-path: url(#clip)"/></svg><img src=""><a href="#top">top</a>'
        '<span style="background: url()">x</span><link rel="stylesheet" href="#x">',
    )
    url = web.add("/self", page.replace(b"<head>", b"<head><style>.a{fill:url(#g)}</style>"))
    db, _ = fetch(tmp_path, [url])
    assert db["pages"].get(url)["status"] == "archived"
    assert web.recorder.hits["/self"] == 1
    assert list(db["resources"].rows) == []


@pytest.mark.hostile
def test_an_image_redirecting_to_data_does_not_poison_later_runs(tmp_path, web):
    web.add("/img/redirects.png", b"", status=302, Location="data:image/png;base64,iVBORw0KGgo=")
    web.add("/img/xn.png", b"", status=302, Location="http://xn--/x.png")
    url = web.add("/pictured", with_images(web.url("/img/redirects.png"), web.url("/img/xn.png"), "http://xn--/direct.png"))
    first = run_mirror("fetch", url, "--delay", "0", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = run_mirror("fetch", web.url("/article/unrelated"), "--delay", "0", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in first.stderr + second.stderr
    with Archive(tmp_path / "archive") as archive:
        rows = {r["url"]: r for r in archive.db.query("select url, status, error from resources")}
        assert rows[web.url("/img/redirects.png")]["error"] == "redirect_scheme"
        assert rows[web.url("/img/xn.png")]["error"] == "bad_url"
        assert archive.db["pages"].get(url)["resources_at"]
        assert archive.db["pages"].get(web.url("/article/unrelated"))["status"] == "archived"
