"""One article behind several links (issue 24): a short link, an AMP copy, a canonical URL, a page
the browser saved, are stored and indexed once; a claim of another site or another text is not
believed; when the original stops being an article its duplicate takes its place."""

from __future__ import annotations

from mirror.seeds import links_from_urls
from mirror.store import Archive

from .helpers import QUICK_ARGS, db_of
from .webserver import article


def _long(words: str) -> str:
    """An article's worth of text of its own: `words`, then 600 characters drawn by a seed of them."""
    import random

    pool = "模型训练推理显存带宽算子融合调度流水线并行张量切分通信拓扑梯度累积混合精度量化蒸馏缓存命中延迟吞吐"
    draw = random.Random(words)
    return words + "。" + "".join(draw.choice(pool) + ("，" if i % 12 == 11 else "") for i in range(600)) + "。"


def test_two_links_to_one_article_are_stored_and_indexed_once(cli, tmp_path, web):
    target = web.add("/posts/flash-attention", article("分块注意力", "独一无二的词：瓦片化。"))
    web.add("/p/123", b"", status=301, Location="/posts/flash-attention")  # a short link
    canonical = f'<link rel="canonical" href="{target}">'
    copy = article("分块注意力", "独一无二的词：瓦片化。").replace(b"<head>", f"<head>{canonical}".encode())
    web.add("/amp/flash-attention", copy)  # the same article at another address, declaring the first
    other = article("另一篇文章", "瓦片化也出现在这里。").replace(b"<head>", b'<head><link rel="canonical" href="/">')
    home_canonical = web.add("/another", other)  # declares the site's home, with its own title: not a duplicate
    (tmp_path / "list.md").write_text(
        f"- {target}\n- {web.url('/p/123')}\n- {web.url('/amp/flash-attention')}\n- {home_canonical}\n", encoding="utf-8"
    )
    result = cli("fetch", "list.md", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[target]["status"] == "archived"
    for url in (web.url("/p/123"), web.url("/amp/flash-attention")):
        assert rows[url]["status"] == "duplicate" and rows[url]["same_as"] == target
    assert rows[home_canonical]["status"] == "archived"
    result = cli("search", "瓦片化", "--json")
    assert sorted(hit["url"] for hit in __import__("json").loads(result.stdout)) == sorted([target, home_canonical])
    result = cli("show", web.url("/p/123"))
    assert f"same article as: {target}" in " ".join(result.stdout.split())
    # a re-extraction keeps them duplicates
    assert cli("reindex").exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[web.url("/p/123")]["status"] == "duplicate"
    assert db_of(tmp_path).execute("select count(*) from pages_fts_docsize").fetchone()[0] == 2


def test_a_page_elsewhere_declaring_an_articles_canonical_url_cannot_hide_it(cli, tmp_path, web):
    """A canonical URL and a title are claims: a page of another site making them, or a page
    whose text differs (the second page of a series), is not the article's duplicate."""
    canonical = web.url("/posts/real-article")
    declares = f'<link rel="canonical" href="{canonical}">'.encode()
    spam = web.add("/x", article("Real Article", _long("广告")).replace(b"<head>", b"<head>" + declares))
    spam = spam.replace("127.0.0.1", "localhost")  # another site
    legit = web.add("/article-7", article("Real Article", _long("斑马")).replace(b"<head>", b"<head>" + declares))
    series = f'<link rel="canonical" href="{web.url("/series")}">'.encode()
    one = web.add("/series-1", article("Series", _long("第一页")).replace(b"<head>", b"<head>" + series))
    two = web.add("/series-2", article("Series", _long("第二页")).replace(b"<head>", b"<head>" + series))
    (tmp_path / "first.md").write_text(f"{spam}\n{one}\n", encoding="utf-8")
    (tmp_path / "second.md").write_text(f"{legit}\n{two}\n", encoding="utf-8")
    assert cli("fetch", "first.md", *QUICK_ARGS).exit_code == 0  # recorded first
    assert cli("fetch", "second.md", *QUICK_ARGS).exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert {url: rows[url]["status"] for url in (spam, legit, one, two)} == dict.fromkeys((spam, legit, one, two), "archived")
    import json

    assert [hit["url"] for hit in json.loads(cli("search", "斑马", "--json").stdout)] == [legit]
    assert [hit["url"] for hit in json.loads(cli("search", "第二页", "--json").stdout)] == [two]


def test_a_relative_canonical_url_is_read_as_the_browser_reads_it(cli, tmp_path, web):
    body = _long("相对")
    original = web.add("/o", article("同一篇", body))
    copy = web.add("/c", article("同一篇", body).replace(b"<head>", b'<head><link rel="canonical" href="/o">'))
    (tmp_path / "list.md").write_text(f"{copy}\n{original}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK_ARGS).exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[copy]["canonical"] == original
    assert (rows[copy]["status"], rows[copy]["same_as"], rows[original]["status"]) == ("duplicate", original, "archived")


def test_when_the_original_stops_being_an_article_its_duplicate_takes_its_place(cli, tmp_path, web):
    import json

    original = web.add("/orig", article("袋鼠", _long("袋鼠")))
    web.add("/short", b"", status=301, Location="/orig")
    (tmp_path / "a.md").write_text(f"{original}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"{web.url('/short')}\n", encoding="utf-8")
    assert cli("fetch", "a.md", "b.md", *QUICK_ARGS).exit_code == 0
    assert db_of(tmp_path)["pages"].get(web.url("/short"))["status"] == "duplicate"
    web.add("/orig", b"<html><head><title>x</title></head><body></body></html>")  # the page is emptied
    result = cli("fetch", "a.md", "--refresh", *QUICK_ARGS)
    assert result.exit_code == 0, result.output
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    # an emptied page is a bad answer (issue 27): it never replaces the saved article
    assert (rows[original]["status"], rows[original]["health"]) == ("archived", "soft_404")
    assert rows[web.url("/short")]["status"] == "duplicate"
    assert [hit["url"] for hit in json.loads(cli("search", "袋鼠", "--json").stdout)] == [original]
    from mirror._types import Extraction, PageStatus

    with Archive(tmp_path / "archive") as archive:  # a re-extraction that finds no text (a reindex) ends the article
        archive.save_extractions([(original, Extraction(status=PageStatus.NO_TEXT, kind="html"))])
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[original]["status"] == "no_text"
    assert (rows[web.url("/short")]["status"], rows[web.url("/short")]["same_as"]) == ("archived", None)
    assert [hit["url"] for hit in json.loads(cli("search", "袋鼠", "--json").stdout)] == [web.url("/short")]


def test_a_page_the_browser_saved_is_checked_for_duplicates_too(tmp_path):
    from mirror._types import Extraction, PageStatus, Render

    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/app", "https://example.com/go"]))
        text = _long("袋熊")
        for url in ("https://example.com/app", "https://example.com/go"):
            rendered = Extraction(status=PageStatus.ARCHIVED, kind="html", title="袋熊", text=text, markdown=text)
            status = archive.record_render(url, Render(final_url="https://example.com/app", status=200, article=rendered))
        assert status == PageStatus.DUPLICATE
        rows = {row["url"]: row for row in archive.db["pages"].rows}
        assert rows["https://example.com/go"]["same_as"] == "https://example.com/app"
        assert archive.db.execute("select count(*) from pages_fts_docsize").fetchone()[0] == 1


def test_a_render_that_makes_a_page_a_duplicate_hands_its_duplicates_to_the_original(tmp_path):
    from mirror._types import Extraction, PageStatus, Render

    text = _long("渲染")
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/b", "https://example.com/a", "https://example.com/c"]))
        db = archive.db
        db.execute("update pages set status = 'archived', title = 'Same', text = ? where url = 'https://example.com/b'", [text])
        db.execute("update pages set status = 'archived', title = 'thin', text = 'x' where url = 'https://example.com/a'")
        db.execute("update pages set status = 'duplicate', same_as = 'https://example.com/a' where url = 'https://example.com/c'")
        rendered = Extraction(status=PageStatus.ARCHIVED, kind="html", title="Same", text=text, markdown=text, canonical="https://example.com/b")
        status = archive.record_render("https://example.com/a", Render(final_url="https://example.com/a", status=200, article=rendered))
        assert status == PageStatus.DUPLICATE
        rows = {row["url"]: (row["status"], row["same_as"]) for row in db["pages"].rows}
        assert rows["https://example.com/a"] == ("duplicate", "https://example.com/b")
        assert rows["https://example.com/c"] == ("duplicate", "https://example.com/b")  # no chain through a duplicate


def test_text_alike_is_one_article_and_a_series_is_not():
    from mirror._util.similar import same_text

    assert same_text(_long("同一篇"), _long("同一篇") + "编辑后补了一句。")  # the AMP copy, edited a little
    assert not same_text(_long("第一页"), _long("第二页"))
    english = " ".join(["the", "model", "is", "trained", "with", "data", "and", "a", "loss"] * 300)
    assert not same_text(english, " ".join(reversed(english.split())))  # the same words, another text
