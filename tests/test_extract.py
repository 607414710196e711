"""Extraction inside `mirror fetch`: encodings, PDFs, pages without text, images, reindex."""

from __future__ import annotations

import json

import pytest
import sqlite_utils

from mirror._types import Extraction
from mirror.extract.article import count_words, decode_html, extract
from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .webserver import make_pdf

FAST = dict(delay=0.0, timeout=10.0, retries=0, backoff=0.05, workers=2)

ZH_ARTICLE = """<!DOCTYPE html><html><head>{meta}<title>显存优化实战</title></head><body>
<article><h1>显存优化实战</h1>
<p>大模型训练时，显存往往是最紧张的资源。本文介绍激活重计算、混合精度和零冗余优化器三种办法。</p>
<p>激活重计算用计算换显存：前向时不保存中间结果，反向时重新计算。混合精度让参数和梯度以半精度存储。</p>
<p>零冗余优化器把优化器状态、梯度和参数切分到各个数据并行进程上，进一步降低每张卡的显存占用。</p>
</article></body></html>"""


def fetch(tmp_path, urls, **options):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(archive, FetchOptions(**{**FAST, **options}))
    return sqlite_utils.Database(tmp_path / "archive" / "mirror.db"), summary


@pytest.mark.parametrize(
    ("content_type", "meta"),
    [
        ("text/html; charset=gb18030", ""),  # correct header
        ("text/html", '<meta charset="gbk">'),  # only <meta>
        ("text/html; charset=utf-8", '<meta http-equiv="Content-Type" content="text/html; charset=gb2312">'),  # header lies
        ("text/html", ""),  # no charset anywhere
        (None, ""),  # no Content-Type at all
    ],
)
def test_gb18030_pages_never_turn_into_mojibake(tmp_path, web, content_type, meta):
    body = ZH_ARTICLE.format(meta=meta).encode("gb18030")
    url = web.add("/gbk", body, content_type=content_type)
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["status"] == "archived"
    assert row["title"] == "显存优化实战"
    assert "激活重计算用计算换显存" in row["text"]
    assert row["language"] == "zh"
    assert "\ufffd" not in row["text"]


def test_utf8_bytes_labelled_gb2312_stay_utf8():
    body = ZH_ARTICLE.format(meta='<meta charset="gb2312">').encode("utf-8")
    assert "激活重计算" in decode_html(body, "text/html; charset=gb2312")


def test_markdown_keeps_structure(tmp_path, web):
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


def test_no_images_option(tmp_path, web):
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


def test_worker_segments_the_search_index_as_the_writer_would(tmp_path, web):
    """The index values come from the extraction worker; they are exactly what the writer
    makes from the stored row, so a page fetched and a page re-indexed are found alike."""
    from mirror._util.segment import index_values

    body = ZH_ARTICLE.format(meta='<meta name="author" content="张 三">').encode()
    extraction = extract(body, "http://127.0.0.1/a", "text/html")
    assert extraction.status == "archived"
    assert extraction.search_index == index_values(extraction.title, extraction.text, extraction.author, extraction.sitename)
    assert "显存" in extraction.search_index[-1].split()  # a bigram token of the body
    assert extract(b"<html><body><p>too short</p></body></html>", "http://x/", "text/html").search_index is None

    url = web.add("/article-zh", body)
    db, _ = fetch(tmp_path, [url])
    from .fts_check import assert_index_matches_pages

    assert_index_matches_pages(db)  # what the worker made is what the row makes
    assert db.execute("select count(*) from pages_fts where pages_fts match ?", ['body2:"显存"']).fetchone()[0] == 1


def test_reindex_leaves_the_index_holding_exactly_the_archived_pages(tmp_path, web):
    """Re-extracted pages are indexed as they are saved; after them, an archived page
    without a capture is indexed from its row and a stale row of a page without text goes."""
    from mirror.fetch import reindex

    article = web.add("/article-zh", ZH_ARTICLE.format(meta="").encode())
    empty = web.add("/empty", b"<html><body><p>nothing here</p></body></html>")
    db, _ = fetch(tmp_path, [article, empty])
    uncaptured = "http://127.0.0.1:9/typed-in"
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls([uncaptured]))
        text = "混合精度训练的笔记，" * 10
        archive.save_extraction(uncaptured, Extraction(status="archived", kind="text", title="笔记", text=text, markdown=text))
    ids = {url: db["pages"].get(url)["id"] for url in (article, empty, uncaptured)}
    from mirror._fts import index_insert

    db.execute("insert into pages_fts (pages_fts) values ('delete-all')")
    db.execute(*index_insert(ids[empty], db["pages"].get(empty)))  # a stale entry, as it went in
    db.conn.commit()
    web.shutdown()
    with Archive(tmp_path / "archive") as archive:
        counts = reindex(archive, workers=1)
    assert counts["indexed"] == 2
    assert sorted(r[0] for r in db.execute("select id from pages_fts_docsize")) == sorted([ids[article], ids[uncaptured]])
    found = db.execute("select rowid from pages_fts where pages_fts match ?", ['body2:"精度"']).fetchall()
    assert sorted(r[0] for r in found) == sorted([ids[article], ids[uncaptured]])
    from .fts_check import assert_index_matches_pages

    assert_index_matches_pages(db)
