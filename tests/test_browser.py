"""End to end in a real headless Chromium (Debian's chromium, driven by Playwright).

Starts `mirror serve` on a fetched archive, types a Chinese word into the
search box, opens the first hit's reader view and checks the article is
visible; screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"

ARTICLE = """<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>显存优化实战</title></head><body>
<article><h1>显存优化实战</h1>
<p>大模型训练时，显存往往是最紧张的资源。本文介绍激活重计算、混合精度和零冗余优化器三种办法。</p>
<p>激活重计算用计算换显存：前向时不保存中间结果，反向时重新计算。混合精度让参数和梯度以半精度存储。</p>
<p>零冗余优化器把优化器状态、梯度和参数切分到各个数据并行进程上，进一步降低每张卡的显存占用。</p>
<p><img src="/diagram.png" alt="示意图"></p><script>document.title = "script ran"</script>
</article></body></html>"""


def chromium_or_skip():
    if CHROMIUM is None:
        message = "Debian's chromium is not installed (apt-get install chromium); .ci/run installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        pytest.fail("playwright is missing: install the test extras")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served_archive(tmp_path, web):
    url = web.add("/zh", ARTICLE.encode())
    from .webserver import PNG

    web.add("/diagram.png", PNG, content_type="image/png")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "list.md").write_text(f"# 显存\n- [显存优化实战]({url})\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([seeds], base=tmp_path))
        run(archive, FetchOptions(delay=0, retries=0, workers=1))
    web.shutdown()  # the browser must need nothing but the archive
    with serving(tmp_path / "archive") as base:
        yield base


@contextmanager
def serving(archive: Path):
    """`mirror serve` on a free port; yields its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--port", str(port), "--archive", str(archive)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        pytest.fail("mirror serve did not start: " + server.stderr.read().decode())
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@contextmanager
def chromium_page():
    """A headless Debian chromium page (Playwright drives it; nothing is downloaded)."""
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        try:
            yield browser.new_page()
        finally:
            browser.close()


def test_search_in_chromium_and_read_the_article(served_archive):
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium_page() as page:
        page.goto(served_archive + "/mirror/pages")
        box = page.locator('input[name="_search"]')
        box.fill("显存")
        box.press("Enter")
        page.wait_for_url("**_search=*")
        page.screenshot(path=str(ARTIFACTS / "table-search.png"), full_page=True)
        first_hit = page.locator("table.rows-and-columns a[href*='/-/mirror/page/']").first
        assert first_hit.inner_text() == "显存优化实战"
        first_hit.click()
        page.wait_for_url("**/-/mirror/page/*")
        article = page.locator("article.mirror-article")
        article.wait_for(state="visible")
        assert "零冗余优化器" in article.inner_text()
        assert article.is_visible()
        assert page.locator("article.mirror-article img").evaluate("img => img.complete && img.naturalWidth") == 1
        page.screenshot(path=str(ARTIFACTS / "reader.png"), full_page=True)

        page.click("text=the archived page as captured")
        page.wait_for_url("**/-/mirror/snapshot/*")
        assert "零冗余优化器" in page.locator("body").inner_text()
        assert page.title() == "显存优化实战"  # the page's script did not run
        assert page.locator("img").evaluate("img => img.complete && img.naturalWidth") == 1
        page.screenshot(path=str(ARTIFACTS / "snapshot.png"), full_page=True)

        page.goto(served_archive + "/-/mirror/search")
        page.fill('input[name="q"]', "显存")
        page.press('input[name="q"]', "Enter")
        page.wait_for_selector("li.hit a.reader-link")
        assert page.locator("li.hit mark").first.inner_text() == "显存"
        page.screenshot(path=str(ARTIFACTS / "search-page.png"), full_page=True)
    assert (ARTIFACTS / "reader.png").stat().st_size > 1000


@pytest.mark.hostile
def test_hostile_archive_raises_no_dialog_in_chromium(tmp_path):
    """Reader, search and table views of hostile pages: no script of theirs runs (issue 10)."""
    from . import hostile_archive

    archive = hostile_archive.build(tmp_path)
    ids = {row["url"]: row["id"] for row in sqlite_utils.Database(archive / "mirror.db").query("select id, url from pages")}
    dialogs, violations = [], []
    with serving(archive) as base, chromium_page() as page:
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
        views = [f"/-/mirror/page/{i}" for i in ids.values()] + [
            "/-/mirror/search?q=hostile",
            "/-/mirror/search?q=" + quote("<script>alert(1)</script>"),
            "/-/mirror/search?q=markup",
            "/mirror/pages?_search=hostile",
            "/mirror/pages",
            "/mirror/links",
            "/mirror/pages?status=skipped",
        ]
        for view in views:
            response = page.goto(base + view)
            assert response.status == 200, view
            page.wait_for_load_state("load")
            assert not page.locator("a[href^='javascript:' i]").count(), view
            for link in page.locator("a[href]").all():  # click every link an archived page put there
                href = link.get_attribute("href") or ""
                assert href.startswith(("/", "http://", "https://", "?", "#")), (view, href)
        page.goto(base + f"/-/mirror/page/{ids[hostile_archive.BOOKMARKLET]}")
        original = page.locator("dt:text('Original') + dd")
        assert original.inner_text() == hostile_archive.BOOKMARKLET and not original.locator("a").count()
        page.goto(base + f"/-/mirror/page/{next(i for u, i in ids.items() if u.endswith('/xss-alt'))}")
        page.locator("article.mirror-article a", has_text="click javascript").click()
        page.wait_for_timeout(300)
        assert "[image not archived: <img src=x onerror=alert('alt')//]" in page.locator("article").inner_text()
    assert dialogs == [], dialogs
    assert violations == [], violations  # not even a blocked attempt: nothing tried to run
