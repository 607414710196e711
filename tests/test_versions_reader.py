"""The versions of a page in the reader, in chromium: the list, a comparison of two in Chinese and
in English, each version as captured, a soft 404's notice as inert text, and the home's link health."""

from __future__ import annotations

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .helpers import chromium_or_skip, extraction_pool
from .webserver import HostileServer, article

pytestmark = pytest.mark.slow

EN_1 = (
    "<html><head><title>Attention is all you need</title></head><body><article><h1>Attention</h1><p>"
    + "The Transformer uses self-attention to draw global dependencies between input and output. " * 3
    + "</p><p>We trained the base model on eight GPUs for twelve hours.</p></article></body></html>"
)


EN_2 = EN_1.replace("eight GPUs for twelve hours", "sixteen TPUs for three days").replace("global dependencies", "long-range dependencies")


ZH_1 = article("闪电注意力", "分块计算让显存访问减少了很多。")


ZH_2 = article("闪电注意力", "分块计算让显存读写减少了很多，速度提升两倍。")


HOSTILE_NOTICE = "<html><head><title>知乎</title></head><body><p>你似乎来到了没有知识存在的荒原<script>window.pwned=1</script></p></body></html>"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Four articles fetched, then changed (English, Chinese), deleted, and turned into zhihu's
    deleted notice, then checked."""
    chromium_or_skip()
    folder = tmp_path_factory.mktemp("versions")
    seeds = folder / "seeds"
    seeds.mkdir()
    with HostileServer() as web:
        urls = {
            "en": web.add("/en", EN_1.encode()),
            "zh": web.add("/zh", ZH_1),
            "gone": web.add("/gone", article("会被删除的文章")),
            "soft": web.add("/soft", article("会变成软404的文章")),
        }
        (seeds / "注意力.md").write_text("# 注意力\n" + "".join(f"- [{k}]({u})\n" for k, u in urls.items()), encoding="utf-8")
        options = dict(delay=0, retries=0, workers=1, timeout=10)
        with Archive(folder / "archive") as archive, archive.lock():
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(archive, FetchOptions(**options), pool=extraction_pool())
            web.add("/en", EN_2.encode())
            web.add("/zh", ZH_2)
            web.recorder.gone.add("/gone")
            web.add("/soft", HOSTILE_NOTICE.encode())
            run(archive, FetchOptions(**options, refresh=True, check=True), pool=extraction_pool())
    db = sqlite_utils.Database(folder / "archive" / "mirror.db")
    ids = {name: db["pages"].get(url)["id"] for name, url in urls.items()}
    states = {name: [v["state"] for v in db.query("select state from versions where page_url = ? order by id", [url])] for name, url in urls.items()}
    assert states == {"en": ["first", "changed"], "zh": ["first", "changed"], "gone": ["first", "gone"], "soft": ["first", "soft_404"]}
    return {"archive": folder / "archive", "urls": urls, "ids": ids, "db": db}


def test_the_reader_lists_the_versions_and_compares_two_in_chinese(built, root, open_page, artifacts):
    page = open_page()
    page.goto(f"{root}/-/mirror/page/{built['ids']['zh']}")
    rows = page.locator("tr.mirror-version")
    assert rows.count() == 2
    assert "changed" in rows.nth(0).inner_text() and "% of the text" in rows.nth(0).inner_text()
    assert "first capture" in rows.nth(1).inner_text()
    page.locator("#versions").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "versions-list.png"), full_page=True)
    page.get_by_role("button", name="Compare the two versions").click()
    page.wait_for_selector(".mirror-diff")
    deleted = page.locator(".mirror-diff del").all_inner_texts()
    inserted = page.locator(".mirror-diff ins").all_inner_texts()
    assert "访问" in "".join(deleted) and "读写" in "".join(inserted) and "速度提升两倍" in "".join(inserted)
    assert "显存" not in "".join(deleted + inserted)  # unchanged characters stay unmarked
    page.screenshot(path=str(artifacts / "diff-chinese.png"), full_page=True)


def test_an_english_diff_marks_whole_words(built, root, open_page, artifacts):
    db, url = built["db"], built["urls"]["en"]
    first, second = [v["id"] for v in db.query("select id from versions where page_url = ? order by id", [url])]
    page = open_page()
    page.goto(f"{root}/-/mirror/page/{built['ids']['en']}/compare?a={first}&b={second}")
    deleted = page.locator(".mirror-diff del").all_inner_texts()
    inserted = page.locator(".mirror-diff ins").all_inner_texts()
    assert "global" in deleted and "long-range" not in deleted and any("long" in i for i in inserted)
    assert any("eight" in d for d in deleted) and any("sixteen" in i for i in inserted)
    page.screenshot(path=str(artifacts / "diff-english.png"), full_page=True)


def test_each_version_opens_as_captured(built, root, open_page):
    db, url = built["db"], built["urls"]["en"]
    first = next(db.query("select id from versions where page_url = ? order by id limit 1", [url]))["id"]
    page = open_page()
    page.goto(f"{root}/-/mirror/page/{built['ids']['en']}/version/{first}")
    assert "eight GPUs" in page.content()  # the first version, not the latest


def test_a_soft_404_notice_is_shown_as_text_and_never_runs(built, root, open_page):
    page = open_page()
    page.goto(f"{root}/-/mirror/page/{built['ids']['soft']}")
    row = page.locator("tr.mirror-version").first.inner_text()
    assert "soft 404" in row and "你似乎来到了没有知识存在的荒原" in row
    assert page.evaluate("window.pwned") is None


def test_the_home_shows_link_health_per_reading_list(built, root, open_page, artifacts):
    page = open_page()
    page.goto(f"{root}/")
    health = page.locator("table.mirror-health").inner_text()
    assert "注意力.md" in health and "2 changed" in health and "1 gone" in health and "1 soft 404" in health
    assert page.locator(".mirror-health .health-gone").evaluate("e => getComputedStyle(e).color") == "rgb(179, 38, 30)"
    page.locator("#link-health").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "link-health.png"), full_page=True)
    table = open_page()
    table.goto(f"{root}/mirror/link_health")
    assert "soft_404" in table.content() and "注意力.md" in table.content()
