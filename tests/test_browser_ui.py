"""The reading UI end to end in a real headless Chromium (Debian's chromium, driven by Playwright).

Starts `mirror serve` on a fetched archive, opens the reading home, types a
Chinese word into the table's search box, opens the first hit's reader view
and checks the article is visible; screenshots of the home, the table search,
the reader, the snapshot and the search page go to test-artifacts/. A styled
snapshot looks like the live page; hostile pages raise no dialog."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .helpers import ROOT, SITE_CSS, STYLED, THEME_CSS, chromium, chromium_or_skip, extraction_pool, fetch_urls, mirror_serve, solid_png
from .hostile_archive import BOOKMARKLET

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"


ARTICLE = """<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>显存优化实战</title></head><body>
<article><h1>显存优化实战</h1>
<p>大模型训练时，显存往往是最紧张的资源。本文介绍激活重计算、混合精度和零冗余优化器三种办法。</p>
<p>激活重计算用计算换显存：前向时不保存中间结果，反向时重新计算。混合精度让参数和梯度以半精度存储。</p>
<p>零冗余优化器把优化器状态、梯度和参数切分到各个数据并行进程上，进一步降低每张卡的显存占用。</p>
<p><img src="/diagram.png" alt="示意图"></p><script>document.title = "script ran"</script>
</article></body></html>"""


@pytest.fixture
def served_archive(tmp_path, web):
    url = web.add("/zh", ARTICLE.encode())
    from .webserver import PNG

    web.add("/diagram.png", PNG, content_type="image/png")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "list.md").write_text(
        f"# 显存\n- [显存优化实战]({url})\n\n# Gone\n- [a page that is not there]({web.url('/missing')})\n", encoding="utf-8"
    )
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([seeds], base=tmp_path))
        run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
    web.shutdown()  # the browser must need nothing but the archive
    with mirror_serve(tmp_path / "archive") as root:
        yield root


def test_search_in_chromium_and_read_the_article(served_archive):
    chromium_or_skip()
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        page = browser.new_page()
        page.goto(served_archive + "/")
        reading_list = page.locator("ul.mirror-links")
        assert "显存优化实战" in reading_list.first.inner_text() and "archived" in reading_list.first.inner_text()
        assert "http_404" in reading_list.last.inner_text()  # a failed link, with its reason
        assert page.locator("section.mirror-seed h3").first.inner_text() == "显存"
        page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)
        page.click("text=All tables (datasette)")  # datasette's table list, one click away
        page.wait_for_url("**/mirror")
        assert page.locator("a[href$='/mirror/pages']").count() >= 1
        page.goto(served_archive + "/mirror/pages")
        box = page.locator('input[name="_search"]')
        box.fill("显存")
        box.press("Enter")
        page.wait_for_url("**/-/mirror/search?q=*")  # the table's search box goes to the ranked search page
        page.screenshot(path=str(ARTIFACTS / "table-search.png"), full_page=True)
        first_hit = page.locator("a[href*='/-/mirror/page/']").first
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


def test_snapshot_looks_like_the_live_page(tmp_path, web):
    """The same element screenshotted in Chromium live and in the snapshot must be the same
    PNG, byte for byte: same layout, colours, web font and background image. The snapshot is
    visited after the web server is gone, and every request it makes must go to mirror serve."""
    chromium_or_skip()
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
    if not font.is_file():
        pytest.skip(f"{font} not found (Debian's fonts-dejavu-core, which chromium depends on)")
    url = web.add("/styled", STYLED.encode())
    web.add("/css/site.css", SITE_CSS.encode(), content_type="text/css")
    web.add("/css/theme.css", THEME_CSS.encode(), content_type="text/css; charset=utf-8")
    web.add("/fonts/probe.ttf", font.read_bytes(), content_type="font/ttf")
    web.add("/img/bg.png", solid_png(8, 8, (255, 248, 220)), content_type="image/png")
    db, _ = fetch_urls(tmp_path, [url], retries=0, workers=1)
    page_id = db["pages"].get(url)["id"]
    ARTIFACTS.mkdir(exist_ok=True)

    def card(page) -> bytes:
        page.wait_for_load_state("networkidle")
        page.evaluate("document.fonts.ready.then(() => true)")
        assert page.evaluate("document.fonts.check('16px Probe')"), "the web font did not load"
        return page.locator("#card").screenshot(animations="disabled")

    with chromium() as browser:
        live = browser.new_page()
        live.goto(url)
        live_card = card(live)
        live.screenshot(path=str(ARTIFACTS / "styled-live.png"), full_page=True)
        web.shutdown()
        with mirror_serve(tmp_path / "archive") as root:
            snapshot = browser.new_page()
            requests: list[str] = []
            snapshot.on("request", lambda request: requests.append(request.url))
            snapshot.goto(f"{root}/-/mirror/snapshot/{page_id}")
            snapshot_card = card(snapshot)
            snapshot.screenshot(path=str(ARTIFACTS / "styled-snapshot.png"), full_page=True)
            assert snapshot.locator("nav ul").evaluate("e => getComputedStyle(e).display") == "flex"
    assert requests and all(r.startswith(root + "/") for r in requests), requests
    assert sum("/-/mirror/resource?url=" in r for r in requests) == 4  # two stylesheets, the font, the image
    (ARTIFACTS / "styled-card-live.png").write_bytes(live_card)
    (ARTIFACTS / "styled-card-snapshot.png").write_bytes(snapshot_card)
    assert snapshot_card == live_card


@pytest.mark.hostile
def test_hostile_archive_raises_no_dialog_in_chromium(hostile_archive):
    """Reader, search and table views of hostile pages: no script of theirs runs (issue 10)."""
    archive = hostile_archive
    ids = {row["url"]: row["id"] for row in sqlite_utils.Database(archive / "mirror.db").query("select id, url from pages")}
    dialogs, violations = [], []
    chromium_or_skip()
    with mirror_serve(archive) as base, chromium() as browser:
        page = browser.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
        views = (
            ["/"]
            + [f"/-/mirror/page/{i}" for i in ids.values()]
            + [
                "/-/mirror/search?q=hostile",
                "/-/mirror/search?q=" + quote("<script>alert(1)</script>"),
                "/-/mirror/search?q=markup",
                "/mirror/pages?_search=hostile",
                "/mirror/pages",
                "/mirror/links",
                "/mirror/pages?status=skipped",
            ]
        )
        for view in views:
            response = page.goto(base + view)
            assert response.status == 200, view
            page.wait_for_load_state("load")
            assert not page.locator("a[href^='javascript:' i]").count(), view
            for link in page.locator("a[href]").all():  # click every link an archived page put there
                href = link.get_attribute("href") or ""
                assert href.startswith(("/", "http://", "https://", "?", "#")), (view, href)
        page.goto(base + f"/-/mirror/page/{ids[BOOKMARKLET]}")
        original = page.locator("dt:text('Original') + dd")
        assert original.inner_text() == BOOKMARKLET and not original.locator("a").count()
        page.goto(base + f"/-/mirror/page/{next(i for u, i in ids.items() if u.endswith('/xss-alt'))}")
        page.locator("article.mirror-article a", has_text="click javascript").click()
        page.wait_for_timeout(300)
        assert "[image not archived: <img src=x onerror=alert('alt')//]" in page.locator("article").inner_text()
    assert dialogs == [], dialogs
    assert violations == [], violations  # not even a blocked attempt: nothing tried to run
