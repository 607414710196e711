"""The browser's limits: its memory, the addresses a page may reach, and how its outcomes are counted."""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter

import pytest
import sqlite_utils
from rich.console import Console

from mirror._types import Outcome
from mirror.browser.renderer import Renderer
from mirror.fetch import Summary

from .conftest import render_directly, run_mirror
from .test_browser import CHROMIUM, chromium_or_skip
from .test_browser_capture import PAGES, TIMEOUT, site  # noqa: F401 - the loopback site fixture
from .test_fetch import fetch_urls


def renderer(**options) -> Renderer:
    defaults = dict(tabs=1, timeout=TIMEOUT, user_agent="MirrorTest/1.0", cookies=[])
    return Renderer(CHROMIUM, **{**defaults, **options})


def test_the_browser_is_restarted_when_it_takes_more_memory_than_allowed(site):  # noqa: F811
    chromium_or_skip()

    async def render_all(r: Renderer) -> list:
        try:
            return [await render_directly(r, site.url(path)) for path in ("/spa", "/static", "/shell")]
        finally:
            await r.close()

    low = renderer(memory_mb=1)  # any chromium takes more than 1 MB
    results = asyncio.run(render_all(low))
    assert low.restarts == 2  # after the first and the second page
    for result in results:
        assert result.error is None and result.dom and result.screenshot, result.notes
        assert any("over the 1 MB limit; it was restarted" in note for note in result.notes)
    high = renderer(memory_mb=100_000)
    results = asyncio.run(render_all(high))
    assert high.restarts == 0 and not any("restarted" in note for r in results for note in r.notes)


def test_a_run_over_the_memory_limit_goes_on_with_every_page_recorded(tmp_path, site):  # noqa: F811
    chromium_or_skip()
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text("\n".join(site.url(p) for p in ("/spa", "/static", "/shell", "/lazy")) + "\n")
    result = run_mirror(
        "fetch",
        "--browser",
        "always",
        "--chromium",
        CHROMIUM,
        "--delay",
        "0",
        "--retries",
        "0",
        "--workers",
        "1",
        "--timeout",
        str(TIMEOUT),
        "--json",
        cwd=tmp_path,
        env={"MIRROR_BROWSER_MEMORY_MB": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert sum(json.loads(result.stdout)["rendered"].values()) == 4
    pages = list(sqlite_utils.Database(tmp_path / "archive" / "mirror.db").query("select * from pages"))
    assert len(pages) == 4
    for page in pages:
        assert page["rendered_at"] and page["screenshot_warc_file"] and page["render_error"] is None, page["render_note"]
    # two tabs: the page that took a browser over the limit says so; the next two pages had a new browser
    assert sum("over the 1 MB limit; it was restarted" in (p["render_note"] or "") for p in pages) >= 2
    spa = next(p for p in pages if p["url"].endswith("/spa"))
    assert (spa["status"], spa["capture"]) == ("archived", "browser")


@pytest.mark.parametrize("value", ["lots", "-1"])
def test_a_bad_memory_limit_is_refused(tmp_path, value):
    chromium_or_skip()
    result = run_mirror("fetch", "--browser", "always", cwd=tmp_path, env={"MIRROR_BROWSER_MEMORY_MB": value})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"MIRROR_BROWSER_MEMORY_MB='{value}': not a number of megabytes" in result.stderr


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


def test_a_loopback_page_rendered_may_request_loopback(tmp_path, web):
    chromium_or_skip()
    web.add("/internal-admin", b"fine", content_type="text/plain")
    url = web.add("/local", b"<html><body><p>local</p><script>fetch('/internal-admin')</script></body></html>")
    db, _ = fetch_urls(tmp_path, [url], images=False, browser="always", chromium=CHROMIUM, timeout=TIMEOUT)
    assert db["pages"].get(url)["rendered_at"] is not None
    assert web.recorder.hits["/internal-admin"] == 1


def test_progress_counts_a_page_the_browser_got_past_as_archived():
    from mirror.cli.progress import FetchReporter

    out = io.StringIO()
    reporter = FetchReporter(Console(file=out, force_terminal=True, width=200))
    summary = Summary(total=1, done=1, statuses=Counter({Outcome.FAILED: 1}))
    reporter.start(summary)
    summary.statuses = Counter({Outcome.ARCHIVED: 1})  # what fetch.run's recount did
    summary.rendered["archived from browser"] += 1
    reporter.render("http://example.com/challenge", "archived from browser", summary)
    reporter.stop()
    assert "archived 1" in out.getvalue().rsplit("fetch", 1)[-1]
