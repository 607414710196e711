"""No URL, redirect, header or body ends a run: each is that URL's failure with a reason (`pytest -m hostile`)."""

from __future__ import annotations

import pytest

import mirror.fetch
import mirror.fetch.runner
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .conftest import run_mirror
from .test_fetch import fetch_urls, page
from .test_host_health import with_images
from .webserver import article

pytestmark = pytest.mark.hostile


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "redirect_scheme"),
        ("javascript:alert(1)", "redirect_scheme"),
        ("mailto:someone@example.com", "redirect_scheme"),
        ("http://xn--/", "bad_url"),
        ("http://[::1", "bad_url"),
        ("http://" + "a" * 100_000 + ".example/", "bad_url"),
    ],
)
def test_bad_redirects_fail_that_page_only(tmp_path, web, location, reason):
    bad = web.add("/bad-redirect", b"", status=302, Location=location)
    good = web.url("/article/after")
    db, summary = fetch_urls(tmp_path, [bad, good])
    assert page(db, bad)["status"] == "failed" and page(db, bad)["error"] == reason
    assert page(db, bad)["error_message"]
    assert page(db, good)["status"] == "archived"
    assert summary.done == 2


def test_backslash_redirect_is_followed_or_failed_never_raised(tmp_path, web):
    url = web.add("/backslash", b"", status=302, Location="http:\\\\127.0.0.1\\x")
    db, _ = fetch_urls(tmp_path, [url, web.url("/article/b")])
    assert page(db, url)["status"] in ("failed", "archived")
    assert page(db, web.url("/article/b"))["status"] == "archived"


@pytest.mark.parametrize("url", ["http://xn--/", "http://" + "a" * 100_000 + ".example/"])
def test_bad_page_urls_fail_with_bad_url(tmp_path, web, url):
    good = web.url("/article/fine")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url, good]))
        stored = [r["url"] for r in archive.db.query("select url from pages where status = 'pending'")]
        mirror.fetch.run(archive, mirror.fetch.FetchOptions(delay=0, retries=2, backoff=0.05))
        rows = {r["url"]: r for r in archive.db.query("select url, status, error from pages")}
    assert rows[good]["status"] == "archived"
    for other in set(stored) - {good}:
        assert rows[other]["status"] == "failed" and rows[other]["error"] == "bad_url"


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


def test_an_unexpected_error_in_one_page_is_that_pages_failure(tmp_path, web, monkeypatch):
    """Whatever goes wrong inside one page's task (here: a bug planted in the page fetch)."""
    real = mirror.fetch.runner.fetch_page

    async def buggy(client, page, options):
        if page.url.endswith("/boom"):
            raise KeyError("planted bug")
        return await real(client, page, options)

    monkeypatch.setattr(mirror.fetch.runner, "fetch_page", buggy)
    boom, fine = web.url("/article/boom"), web.url("/article/fine")
    db, summary = fetch_urls(tmp_path, [boom, fine])
    assert page(db, boom)["status"] == "failed" and page(db, boom)["error"] == "internal"
    assert "KeyError" in page(db, boom)["error_message"] and "planted bug" in page(db, boom)["error_message"]
    assert page(db, fine)["status"] == "archived"


def test_hostile_header_values_do_not_end_the_run(tmp_path, web):
    odd = web.add("/odd-headers", article("odd"), **{"Content-Type": "text/html; charset=no-such-charset", "Retry-After": "Wed, 99 Foo"})
    db, _ = fetch_urls(tmp_path, [odd])
    assert page(db, odd)["status"] in ("archived", "no_text")


@pytest.mark.parametrize("charset", ["idna", "punycode", "unicode-escape", "rot13", "base64"])
def test_a_hostile_charset_fails_nothing_but_its_own_page(tmp_path, web, charset):
    """`charset=idna` made the codec raise on every response read (page, 404, stylesheet)."""
    body = "<html><body><article><h1>Caf\xe9</h1><p>{}</p></article></body></html>".format("Plain words here. " * 40)
    css = web.add(f"/{charset}.css", b"body { color: red } /* \xe9 */", content_type=f"text/css; charset={charset}")
    page_html = body.replace("<html>", f'<html><head><link rel="stylesheet" href="{css}"></head>').encode("latin-1")
    bad = web.add(f"/charset/{charset}", page_html, content_type=f"text/html; charset={charset}")
    missing = web.add(f"/missing/{charset}", b"\xff\xfe not here", content_type=f"text/plain; charset={charset}", status=404)
    first = run_mirror("fetch", bad, missing, "--delay", "0", "--browser", "never", cwd=tmp_path)
    second = run_mirror("fetch", web.url("/article/next"), "--delay", "0", "--browser", "never", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "Traceback" not in first.stderr + second.stderr
    with Archive(tmp_path / "archive") as archive:
        rows = {r["url"]: r for r in archive.db.query("select url, status, error, text from pages")}
    assert rows[bad]["status"] == "archived" and "Café" in rows[bad]["text"]  # read as UTF-8 failing that, Latin-1-ish
    assert rows[missing]["status"] == "failed" and rows[missing]["error"] == "http_404"
    assert rows[web.url("/article/next")]["status"] == "archived"
