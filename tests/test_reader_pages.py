"""The reader's pages in chromium (issue 42, item 8): search results whose thumbnails stay in
their row, the failures page's SQL within the page, Pocket's tags in the reader and as a facet of
the pages table, a page that changed since it was first saved saying so at the top, and the
Chinese comparison marking an insertion by character."""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import quote

from mirror.plugin.versions import diff_html

from .browsing import browser_page, fetch, shot
from .helpers import mirror_serve, run_mirror

PARAGRAPH = "<p>{}：显存是训练大模型时最紧张的资源，激活重计算、混合精度和零冗余优化器是三种常用的节省办法，本文逐一介绍它们的原理和代价。</p>"


def article(title: str, extra: str = "") -> bytes:
    body = "".join(PARAGRAPH.format(f"{title}第{n}段") for n in range(1, 4)) + extra
    return f"<html><head><meta charset='utf-8'><title>{title}</title></head><body><article><h1>{title}</h1>{body}</article></body></html>".encode()


def _json(url: str):
    with urllib.request.urlopen(url) as response:
        return json.loads(response.read().decode())


def test_search_results_keep_their_thumbnails_in_their_rows(tmp_path, web):
    urls = [web.add(f"/p{n}", article(f"显存优化{n}")) for n in range(4)]
    (tmp_path / "list.md").write_text("".join(f"- {url}\n" for url in urls), encoding="utf-8")
    fetch(tmp_path, "list.md", options=("--browser", "always"))  # a screenshot of each: the thumbnails
    artifacts = tmp_path / "artifacts"
    web.shutdown()
    with mirror_serve(tmp_path / "archive") as root, browser_page(artifacts, width=1000) as page:
        page.goto(f"{root}/-/mirror/search?q=显存")
        hits = page.locator("ol.mirror-hits > li")
        assert hits.count() == 4 and page.locator("img.thumb").count() == 4
        previous_bottom = 0
        for number in range(4):
            row = hits.nth(number).bounding_box()
            thumb = hits.nth(number).locator("img.thumb").bounding_box()
            assert row["y"] >= previous_bottom - 1  # rows one under another, not staggered by floats
            assert thumb["y"] >= row["y"] - 1 and thumb["y"] + thumb["height"] <= row["y"] + row["height"] + 1  # inside its row
            previous_bottom = row["y"] + row["height"]
        footer = page.locator("footer").first.bounding_box()
        assert footer["y"] >= previous_bottom - 1  # the footer after the last hit, not beside a thumbnail
        shot(page, artifacts, "search-thumbnails")


def test_the_failures_page_fits_its_width(tmp_path, web):
    broken = [web.url(f"/missing/{'long-segment-' * 12}{n}") for n in range(3)]
    (tmp_path / "list.md").write_text("".join(f"- {url}\n" for url in broken), encoding="utf-8")
    fetch(tmp_path, "list.md")
    artifacts = tmp_path / "artifacts"
    with mirror_serve(tmp_path / "archive") as root, browser_page(artifacts, width=900) as page:
        page.goto(f"{root}/mirror/failures")
        sql = page.locator("#sql-query")
        if sql.count():  # (shown unless the user hid it)
            assert sql.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the SQL overflows its box"
            box = sql.bounding_box()
            assert box["x"] + box["width"] <= 900
        shot(page, artifacts, "failures")


POCKET = """<!DOCTYPE html><html><head><meta charset="UTF-8"><title>Pocket Export</title></head><body><h1>Unread</h1><ul>
<li><a href="{one}" time_added="1700000000" tags="mlsys,注意力">显存优化</a></li>
<li><a href="{two}" time_added="1700000100" tags="mlsys">另一篇</a></li>
</ul></body></html>"""


def test_pocket_tags_are_shown_in_the_reader_and_faceted_in_the_table(tmp_path, web):
    one, two = web.add("/one", article("显存优化")), web.add("/two", article("另一篇"))
    (tmp_path / "pocket.html").write_text(POCKET.format(one=one, two=two), encoding="utf-8")
    fetch(tmp_path, "pocket.html")
    [hit] = json.loads(run_mirror("search", "title:显存优化", "--json", cwd=tmp_path).stdout)
    assert "tags: mlsys, 注意力" in run_mirror("show", str(hit["id"]), cwd=tmp_path).stdout
    artifacts = tmp_path / "artifacts"
    web.shutdown()
    with mirror_serve(tmp_path / "archive") as root, browser_page(artifacts) as page:
        page.goto(f"{root}/-/mirror/page/{hit['id']}")
        tags = page.locator("dl.mirror-meta dt", has_text="Tags")
        assert tags.count() == 1
        assert tags.locator("xpath=following-sibling::dd[1]").inner_text() == "mlsys, 注意力"
        shot(page, artifacts, "reader-tags")
        page.goto(f"{root}/mirror/pages")
        facet = page.locator(".facet-info[data-column='link_tags']")
        assert facet.count() == 1, page.content()[:3000]
        assert "mlsys" in facet.inner_text() and "注意力" in facet.inner_text()
        shot(page, artifacts, "pages-tag-facet")
        tagged = _json(f"{root}/mirror/pages.json?link_tags__arraycontains={quote('注意力')}&_shape=array&_col=url")
        assert [row["url"] for row in tagged] == [one]


CHANGED = "<p>新闻：该公司成立以来发展迅速，集团于2003年在香港上市，业务遍及全国各地，员工超过一万人。</p>"
BEFORE = "<p>新闻：该公司成立以来发展迅速，在香港上市，业务遍及全国各地，员工超过一万人。</p>"


def test_a_chinese_insertion_is_marked_by_character():
    marked = diff_html("该公司成立以来发展迅速，在香港上市，业务遍及全国各地。", "该公司成立以来发展迅速，集团于2003年在香港上市，业务遍及全国各地。")
    assert marked == "该公司成立以来发展迅速，<ins>集团于2003年</ins>在香港上市，业务遍及全国各地。"


def test_a_page_that_changed_says_so_at_the_top_and_compares_by_character(tmp_path, web):
    url = web.add("/news", article("公司新闻", BEFORE))
    (tmp_path / "list.md").write_text(f"- {url}\n", encoding="utf-8")
    fetch(tmp_path, "list.md")
    web.add("/news", article("公司新闻", CHANGED))
    checked = run_mirror("check", "--older-than", "0", "--delay", "0", "--browser", "never", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    [hit] = json.loads(run_mirror("search", "公司新闻", "--json", cwd=tmp_path).stdout)
    artifacts = tmp_path / "artifacts"
    web.shutdown()
    with mirror_serve(tmp_path / "archive") as root, browser_page(artifacts) as page:
        page.goto(f"{root}/-/mirror/page/{hit['id']}")
        notice = page.locator("p.mirror-changed")
        assert notice.count() == 1
        h1, top = page.locator("h1").first.bounding_box(), notice.bounding_box()
        assert top["y"] > h1["y"] and top["y"] < page.locator("article.mirror-article").bounding_box()["y"]  # at the top
        assert "changed since it was first saved" in notice.inner_text()
        shot(page, artifacts, "reader-changed")
        notice.locator("a", has_text="What changed").click()
        page.wait_for_load_state()
        inserted = page.locator(".mirror-diff ins")
        assert [inserted.nth(n).inner_text() for n in range(inserted.count())] == ["集团于2003年"]
        assert page.locator(".mirror-diff del").count() == 0
        shot(page, artifacts, "compare-by-character")
