"""Extraction inside `mirror fetch`: the article's plain text and Markdown, PDFs, pages without
text, MIME sniffing, garbage, and reindex."""

from __future__ import annotations

import json
import re

import pytest

from mirror.extract.article import count_words, extract
from mirror.extract.sniff import sniff

from .helpers import ZH_ARTICLE, fetch
from .webserver import make_pdf

LINKED_ARTICLE = """<html><head><title>Beijing notes</title></head><body>
<nav><a href="/home">Home</a> <a href="/news">News</a></nav>
<article><h1>Beijing notes</h1>
<p>Reporters in <a href="http://beijing.qianlong.com/">Beijing</a> described the new subway line, which
connects the airport with the city centre in under twenty minutes and carries thousands every morning.</p>
<p><img src="http://images.sohu.com/chat/p.jpg" alt=""> The station designs borrow from courtyard houses,
with timber screens and skylights that let daylight reach the platforms even in the winter months.</p>
<p>Readers can find the timetable at www.example.org, the operator said, and more at
<a href="https://example.net/timetable?lang=en">the operator's site</a>, where fares are listed too.</p>
<p>{control}Officials expect the line to carry half a million passengers a day once the last stations open.</p>
</article></body></html>"""


def _plain_checks(text: str) -> None:
    assert "](" not in text and "![" not in text
    assert "http" not in text and "sohu" not in text and "qianlong" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)


def test_markdown_keeps_headings_lists_code_tables_and_links(tmp_path, web):
    page = """<html><head><title>Notes</title></head><body><article><h1>Notes</h1>
    <h2>Tiling</h2><p>FlashAttention splits the attention matrix into tiles that fit in SRAM, so that the
    softmax can be computed block by block without writing the whole matrix to memory.</p>
    <ul><li>first point about tiles</li><li>second point about recomputation</li></ul>
    <pre><code>def attention(q, k, v):\n    return softmax(q @ k.T) @ v</code></pre>
    <table><tr><th>method</th><th>memory</th></tr><tr><td>standard</td><td>quadratic</td></tr></table>
    <p>See <a href="https://arxiv.org/abs/2205.14135">the paper</a> for the proof and more experiments
    on long sequences, where the savings are largest.</p><p><img src="/fig1.png" alt="tiling diagram"></p>
    </article></body></html>"""
    url = web.add("/notes", page.encode())
    web.add("/fig1.png", b"\x89PNG\r\n\x1a\nfake", content_type="image/png")
    db, _ = fetch(tmp_path, [url])
    from mirror.store.queries import with_markdown

    row = with_markdown(db["pages"].get(url))
    md = row["markdown"]
    assert "## Tiling" in md
    assert "- first point about tiles" in md
    assert "```" in md and "softmax(q @ k.T)" in md
    assert "| method | memory |" in md
    assert "[the paper](https://arxiv.org/abs/2205.14135)" in md
    assert f"![tiling diagram]({web.url('/fig1.png')})" in md
    assert row["word_count"] == count_words(row["text"])


def test_article_images_are_captured(tmp_path, web):
    page = ZH_ARTICLE.format(meta="").replace(
        "</article>",
        '<p><img src="/img/a.png"></p><p><img data-src="/img/b?wx_fmt=png" src="data:image/gif;base64,R0lGOD"></p></article>',
    )
    url = web.add("/with-images", page.encode())
    web.add("/img/a.png", b"\x89PNG\r\n\x1a\nA", content_type="image/png")
    web.add("/img/b", b"\x89PNG\r\n\x1a\nB", content_type="image/png")
    db, _ = fetch(tmp_path, [url])
    resources = {r["url"]: r for r in db["resources"].rows}
    assert set(resources) == {web.url("/img/a.png"), web.url("/img/b?wx_fmt=png")}
    assert {r["status"] for r in resources.values()} == {"archived"}
    assert all(r["page_url"] == url and r["warc_file"] for r in resources.values())
    assert db["pages"].get(url)["resources_at"]


def test_no_images_fetches_no_image(tmp_path, web):
    page = ZH_ARTICLE.format(meta="").replace("</article>", '<p><img src="/img/a.png"></p></article>')
    url = web.add("/with-image", page.encode())
    web.add("/img/a.png", b"\x89PNG\r\n\x1a\nA", content_type="image/png")
    db, _ = fetch(tmp_path, [url], images=False)
    assert db["resources"].count == 0
    assert web.recorder.hits["/img/a.png"] == 0


def test_pdf_text_and_title(tmp_path, web):
    lines = [f"Line {i}: FlashAttention is an IO-aware exact attention algorithm using tiling." for i in range(6)]
    url = web.add("/paper.pdf", make_pdf("FlashAttention-3", lines), content_type="application/pdf")
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["status"] == "archived" and row["kind"] == "pdf"
    assert row["title"] == "FlashAttention-3" and row["author"] == "Tri Dao"
    assert "IO-aware exact attention" in row["text"]


@pytest.mark.parametrize(
    ("path", "body", "content_type"),
    [
        (
            "/video",
            b"<html><head><title>Video: attention explained</title><meta name='description' content='A talk'></head>"
            b"<body><video src='/v.mp4'></video></body></html>",
            "text/html",
        ),
        ("/data.json", b'{"items": [1, 2, 3]}', "application/json"),
        ("/pic.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png"),
    ],
)
def test_pages_without_text_are_no_text_with_metadata(tmp_path, web, path, body, content_type):
    url = web.add(path, body, content_type=content_type)
    db, summary = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["status"] == "no_text"
    assert row["warc_file"]  # the capture is still kept
    if path == "/video":
        assert row["title"] == "Video: attention explained"
        assert row["description"] == "A talk"
    assert summary.statuses["no_text"] == 1
    assert db.execute("select count(*) from pages_fts_docsize").fetchone()[0] == 0


def test_reindex_rebuilds_from_warc_without_network(tmp_path, web, cli):
    url = web.add("/article-zh", ZH_ARTICLE.format(meta="").encode())
    db, _ = fetch(tmp_path, [url])
    db.execute("insert into pages_fts (pages_fts) values ('delete-all')")  # (an external-content index: emptied whole)
    db.execute("update pages set text = null, markdown_z = null, title = null where url = ?", [url])
    db.conn.commit()
    web.shutdown()  # no network from here on
    result = cli("reindex", "--archive", str(tmp_path / "archive"))
    assert result.exit_code == 0, result.output
    row = db["pages"].get(url)
    assert row["title"] == "显存优化实战" and "零冗余优化器" in row["text"]
    hits = cli("search", "显存", "--json", "--archive", str(tmp_path / "archive"))
    assert [h["url"] for h in json.loads(hits.stdout)] == [url]


def test_extract_never_raises_on_garbage():
    """Garbage is a page without text, of the kind it looks like; never an exception."""
    garbage = {
        b"": "other",
        b"\0\1\2": "other",
        b"<html>": "html",
        "<p>文字</p>".encode("utf-16"): "html",
        b"%PDF-1.4 broken": "pdf",
    }
    for body, kind in garbage.items():
        result = extract(body, "https://example.com/", None)
        assert (result.status, result.kind, result.text, result.word_count) == ("no_text", kind, None, 0), body


def test_an_article_after_a_stray_closing_html_tag_is_read():
    """A CMS header included with its own `</html>` ends the document for libxml2, which starts a
    second root with the rest; browsers read the rest into the body, and so does extraction."""
    header = '<div class="header"><a href="/">首页</a> | <a href="/en">EN</a></div></html>'
    page = ZH_ARTICLE.format(meta='<meta charset="utf-8">').replace("<body>", "<body>" + header, 1)
    result = extract(page.encode(), "https://www.gov.example/a.html", "text/html")
    assert result.status == "archived" and "零冗余优化器" in result.text and result.title == "显存优化实战"


def test_count_words_mixes_han_and_latin():
    assert count_words("FlashAttention 通过分块 reduces memory") == 3 + 4


def test_show_renders_the_saved_article_with_provenance(tmp_path, web, cli):
    url = web.add("/shown", ZH_ARTICLE.format(meta="").encode())
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "list.md").write_text(f"## 显存\n- [显存优化实战]({url})\n", encoding="utf-8")
    result = cli("fetch", "--delay", "0", "--workers", "1", "--archive", str(tmp_path / "archive"), str(seeds))
    assert result.exit_code == 0, result.output
    shown = cli("show", url, "--archive", str(tmp_path / "archive"))
    assert shown.exit_code == 0
    assert "显存优化实战" in shown.stdout and "零冗余优化器" in shown.stdout
    assert "list.md:2 (显存)" in shown.stdout
    missing = cli("show", "https://nowhere.example/", "--archive", str(tmp_path / "archive"))
    assert missing.exit_code == 1 and "no such page" in missing.output
    no_archive = cli("search", "显存", "--archive", str(tmp_path / "nope"))
    assert no_archive.exit_code == 1 and "no archive here" in no_archive.output


def test_text_is_plain_prose_and_markdown_keeps_links_and_images():
    result = extract(LINKED_ARTICLE.format(control="\x1b[31m\x07").encode(), "https://news.example.com/a", "text/html")
    assert result.status == "archived"
    _plain_checks(result.text)
    assert "Reporters in Beijing described" in result.text
    assert "www.example.org" in result.text  # prose stays prose
    assert "[Beijing](http://beijing.qianlong.com/)" in result.markdown
    assert "![](http://images.sohu.com/chat/p.jpg)" in result.markdown
    assert result.images == ["http://images.sohu.com/chat/p.jpg"]
    assert "\x1b" not in result.markdown and "Home" not in result.text


def test_relative_links_and_images_of_the_article_become_absolute():
    page = (
        LINKED_ARTICLE.format(control="")
        .replace("http://beijing.qianlong.com/", "../city/beijing.html")
        .replace("http://images.sohu.com/chat/p.jpg", "/img/p.jpg")
    )
    result = extract(page.encode(), "https://news.example.com/world/a.html", "text/html")
    assert "[Beijing](https://news.example.com/city/beijing.html)" in result.markdown
    assert "![](https://news.example.com/img/p.jpg)" in result.markdown
    assert result.images == ["https://news.example.com/img/p.jpg"]
    assert "Reporters in Beijing described" in result.text and "city/" not in result.text


def test_search_snippets_of_a_linked_page_are_plain(tmp_path, web, cli):
    url = web.add("/linked", LINKED_ARTICLE.format(control="\x1b[2J").encode())
    db, _ = fetch(tmp_path, [url], images=False)
    _plain_checks(db["pages"].get(url)["text"])
    archive = str(tmp_path / "archive")
    for query in ("Beijing", "station", "timetable"):
        hits = json.loads(cli("search", query, "--json", "--archive", archive).stdout)
        assert [h["url"] for h in hits] == [url], query
        _plain_checks(hits[0]["snippet"])
    # words that exist only in link targets and image file names are not indexed
    for query in ("qianlong", "sohu", "images"):
        assert json.loads(cli("search", query, "--json", "--archive", archive).stdout) == [], query


@pytest.mark.parametrize(
    ("body", "content_type", "kind"),
    [
        (b"\n\n<!-- a comment -->\r\n<HTML><head>", None, "html"),
        (b"\xef\xbb\xbf  <!DOCTYPE html><p>x", "text/plain", "html"),
        (b"\t<table><tr><td>x", "application/octet-stream", "html"),
        (b"<p>x</p>", "text/plain; charset=gbk", "html"),
        (b"<?xml version='1.0'?><rss>", None, "html"),
        (b"%PDF-1.4\n", "application/octet-stream", "pdf"),
        (b"plain words, nothing else", None, "text"),
        (b"plain words, nothing else", "text/plain", "text"),
        (b"<pre>not a tag the rules know", "text/plain", "text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", None, "other"),
        (b"<html>", "image/png", "other"),
        (b"{}", "application/json", "other"),
    ],
)
def test_the_kind_of_a_body_is_sniffed_whatever_its_content_type_says(body, content_type, kind):
    assert sniff(body, content_type) == kind


def test_reindex_brings_an_old_archive_to_the_new_text(tmp_path, web, cli):
    url = web.add("/linked", LINKED_ARTICLE.format(control="").encode())
    db, _ = fetch(tmp_path, [url], images=False)
    new_text = db["pages"].get(url)["text"]
    # an archive from before plain text: Markdown links and images in `text`, and indexed so
    old = "Reporters in [Beijing](http://beijing.qianlong.com/) described ![](http://images.sohu.com/chat/p.jpg) the station"
    db.execute("update pages set text = ? where url = ?", [old, url])
    db.conn.commit()
    archive = str(tmp_path / "archive")
    from mirror.store import Archive

    with Archive(tmp_path / "archive") as store:
        store.rebuild_index()
    assert json.loads(cli("search", "qianlong", "--json", "--archive", archive).stdout) != []
    # even before the reindex, snippets of the old text are plain
    for query in ("Beijing", "station", "qianlong"):
        hits = json.loads(cli("search", query, "--json", "--archive", archive).stdout)
        _plain_checks(hits[0]["snippet"])
    web.shutdown()  # no network from here on
    result = cli("reindex", "--archive", archive)
    assert result.exit_code == 0, result.output
    assert db["pages"].get(url)["text"] == new_text
    _plain_checks(new_text)
    assert json.loads(cli("search", "qianlong", "--json", "--archive", archive).stdout) == []
    assert [h["url"] for h in json.loads(cli("search", "station", "--json", "--archive", archive).stdout)] == [url]


def test_a_run_and_a_reindex_given_a_pool_extract_in_it_and_leave_it_running(tmp_path, web, monkeypatch):
    """`fetch.run(pool=)` and `reindex(pool=)` (the tests' one pool a session): the caller's
    workers extract, though they started in another folder than the archive's relative path
    names, and they are the caller's to stop."""
    import os
    from pathlib import Path

    from mirror.extract.pool import extraction_pool
    from mirror.fetch import FetchOptions, reindex, run
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    url = web.add("/zh", ZH_ARTICLE.format(meta="").encode())
    with extraction_pool(1) as pool:
        worker = pool.submit(os.getpid).result()  # started here
        monkeypatch.chdir(tmp_path)
        with Archive(Path("archive")) as archive, archive.lock():
            archive.record_inventory(links_from_urls([url]))
            run(archive, FetchOptions(delay=0, retries=0), pool=pool)
            assert archive.db["pages"].get(url)["status"] == "archived"
            assert reindex(archive, pool=pool)["archived"] == 1
        assert pool.submit(os.getpid).result() == worker  # the same worker, still running
