"""Article quality: plain `text`, Markdown for reading, sniffing, legacy Chinese, reindex."""

from __future__ import annotations

import html
import json
import re

import pytest

from mirror.extract.article import decode_html, extract
from mirror.extract.sniff import sniff

from .conftest import CORPUS
from .test_extract import fetch

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


def _legacy_fixture(folder: str, name: str) -> tuple[str, list[str]]:
    """A title and paragraphs of real legacy-Chinese text, from a feed in encodings-zh."""
    path = CORPUS / "encodings-zh" / folder / name
    if not path.exists():
        pytest.skip(f"corpus file missing: {path}")
    text = html.unescape(re.sub(r"<[^>]+>", "\n", path.read_bytes().decode("gb18030" if folder == "GB2312" else "big5")))
    text = html.unescape(re.sub(r"<[^>]+>", "\n", text))  # descriptions hold escaped HTML
    lines = [" ".join(line.split()) for line in text.splitlines()]
    han = [line for line in lines if len(re.findall(r"[\u4e00-\u9fff]", line)) >= 15]
    assert len(han) >= 6
    return han[0][:20], han[1:9]


def _page(title: str, paragraphs: list[str], head: str = "") -> str:
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
    return f"<html><head>{head}<title>{title}</title></head><body><div id=content><h1>{title}</h1>{body}</div></body></html>"


def _clean_chinese(text: str, paragraphs: list[str]) -> None:
    assert "\ufffd" not in text
    found = sum(p[:12] in text for p in paragraphs)
    assert found >= len(paragraphs) // 2, text[:300]


def test_gb2312_page_without_content_type_behind_a_comment(tmp_path, web):
    title, paragraphs = _legacy_fixture("GB2312", "2.blog.westca.com.xml")
    page = "\r\n\r\n<!-- saved from a 2005 news site -->\r\n" + _page(title, paragraphs)
    url = web.add("/old-gb2312", page.encode("gb2312", "replace"), content_type=None)
    db, _ = fetch(tmp_path, [url], images=False)
    row = db["pages"].get(url)
    assert row["kind"] == "html" and row["status"] == "archived"
    assert row["language"] == "zh"
    _clean_chinese(row["text"], paragraphs)


def test_undeclared_gbk_page_is_clean_chinese(tmp_path, web):
    """Mostly ASCII (a large inline script), a little Chinese: byte statistics guess a Western
    or Cyrillic code page for such a page."""
    title, paragraphs = _legacy_fixture("GB2312", "cnblog.org.xml")
    paragraphs = paragraphs[:4]
    paragraphs[0] = "朱镕基与王喆在堃园谈话，" + paragraphs[0]  # characters GBK has and GB2312 lacks
    script = "<script>" + "var slot = document.getElementById('ad');\n" * 500 + "</script>"
    url = web.add("/undeclared-gbk", _page(title, paragraphs, head=script).encode("gbk", "replace"), content_type="text/html")
    db, _ = fetch(tmp_path, [url], images=False)
    row = db["pages"].get(url)
    assert row["status"] == "archived"
    _clean_chinese(row["text"], paragraphs)
    assert "朱镕基与王喆在堃园谈话" in row["text"]


@pytest.mark.parametrize("header", [None, "text/html; charset=iso-8859-1"])
def test_undeclared_big5_page_is_clean_chinese(tmp_path, web, header):
    title, paragraphs = _legacy_fixture("Big5", "upsaid.com.xml")
    url = web.add("/undeclared-big5", _page(title, paragraphs).encode("big5", "replace"), content_type=header)
    db, _ = fetch(tmp_path, [url], images=False)
    row = db["pages"].get(url)
    assert row["status"] == "archived"
    _clean_chinese(row["text"], paragraphs)


def test_real_legacy_bytes_with_their_declarations_removed():
    files = sorted((CORPUS / "encodings-zh").glob("*/*.*"))
    if not files:
        pytest.skip(f"encodings-zh not found in {CORPUS}")
    assert len(files) >= 40
    for path in files:
        folder = path.parent.name
        raw = re.sub(rb"""(encoding|charset)\s*=\s*["']?[\w-]+["']?""", b"", path.read_bytes())
        assert decode_html(raw) == raw.decode("gb18030" if folder == "GB2312" else "big5"), path.name


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
def test_mime_sniffing(body, content_type, kind):
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
