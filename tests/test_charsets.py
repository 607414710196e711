"""Chinese pages whatever their bytes: GB2312/GBK/GB18030 and Big5, declared, undeclared, wrongly
declared or with broken bytes, never mojibake; a hostile charset fails only its own page."""

from __future__ import annotations

import html
import re

import pytest

from mirror.extract.article import decode_html
from mirror.store import Archive

from .helpers import CORPUS, ZH_ARTICLE, corpus_or_skip, fetch, run_mirror


def _legacy_fixture(folder: str, name: str) -> tuple[str, list[str]]:
    """A title and paragraphs of real legacy-Chinese text, from a feed in encodings-zh."""
    path = CORPUS / "encodings-zh" / folder / name
    corpus_or_skip(path)
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
    files = sorted(corpus_or_skip(CORPUS / "encodings-zh").glob("*/*.*"))
    assert len(files) >= 40
    for path in files:
        folder = path.parent.name
        raw = re.sub(rb"""(encoding|charset)\s*=\s*["']?[\w-]+["']?""", b"", path.read_bytes())
        assert decode_html(raw) == raw.decode("gb18030" if folder == "GB2312" else "big5"), path.name


def test_a_declared_gb2312_page_with_a_few_bad_bytes_reads_as_chinese(tmp_path, web):
    body = (
        "<html><head><meta charset=gb2312><title>流水线并行</title></head><body><article>"
        + "<p>流水线并行把模型按层切成几段，每段放在一张卡上，微批次依次流过各段。</p>" * 400
        + "</article></body></html>"
    ).encode("gb18030")
    bad = body[:7707] + b"\xff\xfe" + body[7709:39365] + b"\x81" + body[39366:]
    url = web.add("/gb2312", bad, content_type="text/html; charset=gb2312")
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["title"] == "流水线并行" and row["language"] == "zh"
    assert "微批次依次流过各段" in row["text"] and row["text"].count("\ufffd") <= 4


HOSTILE_CHARSETS = ["idna", "punycode", "unicode-escape", "rot13", "base64"]


@pytest.mark.hostile
def test_a_hostile_charset_fails_nothing_but_its_own_page(tmp_path, web):
    """`charset=idna` made the codec raise on every response read (page, 404, stylesheet). One run
    over a page, a 404 and a stylesheet in each such charset, then a run after it on the same archive."""
    body = "<html><body><article><h1>Caf\xe9</h1><p>{}</p></article></body></html>".format("Plain words here. " * 40)
    pages, missing = {}, {}
    for charset in HOSTILE_CHARSETS:
        css = web.add(f"/{charset}.css", b"body { color: red } /* \xe9 */", content_type=f"text/css; charset={charset}")
        page_html = body.replace("<html>", f'<html><head><link rel="stylesheet" href="{css}"></head>').encode("latin-1")
        pages[charset] = web.add(f"/charset/{charset}", page_html, content_type=f"text/html; charset={charset}")
        missing[charset] = web.add(f"/missing/{charset}", b"\xff\xfe not here", content_type=f"text/plain; charset={charset}", status=404)
    first = run_mirror("fetch", *pages.values(), *missing.values(), "--delay", "0", "--browser", "never", cwd=tmp_path)
    second = run_mirror("fetch", web.url("/article/next"), "--delay", "0", "--browser", "never", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "Traceback" not in first.stderr + second.stderr
    with Archive(tmp_path / "archive") as archive:
        rows = {r["url"]: r for r in archive.db.query("select url, status, error, text from pages")}
    for charset in HOSTILE_CHARSETS:
        bad = rows[pages[charset]]
        assert bad["status"] == "archived" and "Café" in bad["text"], charset  # read as UTF-8 failing that, Latin-1-ish
        assert (rows[missing[charset]]["status"], rows[missing[charset]]["error"]) == ("failed", "http_404"), charset
    assert rows[web.url("/article/next")]["status"] == "archived"
