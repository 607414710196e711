"""Extraction of real saved pages from ../shared/corpus, served on 127.0.0.1."""

from __future__ import annotations

import json
import re
from collections import Counter

import sqlite_utils

from mirror.extract.markdown import (
    _WORD as WORDS,  # one CJK character, or a run of letters and digits
)

from .helpers import CORPUS

MOJIBAKE = re.compile("[\ufffd]|Ã.|â€|ç\u009a|å\u0085")


def rows(corpus_archive):
    from mirror.store.queries import with_markdown

    return {r["url"].split("/", 3)[3]: with_markdown(r) for r in sqlite_utils.Database(corpus_archive / "mirror.db")["pages"].rows}


def test_every_corpus_page_is_fetched_and_extracted(corpus_archive):
    pages = rows(corpus_archive)
    assert len(pages) >= 100
    assert {r["status"] for r in pages.values()} <= {"archived", "no_text"}
    archived = [r for r in pages.values() if r["status"] == "archived"]
    assert len(archived) >= 0.9 * len(pages)
    for name, row in pages.items():
        if row["status"] != "archived":
            continue
        assert row["text"] and row["markdown"] and row["word_count"] > 0
        source = (CORPUS / name).read_bytes().decode("utf-8", errors="replace")
        for field in (row["text"], row["title"] or ""):
            for bad in set(MOJIBAKE.findall(field)):
                assert bad in source, (name, bad)  # only damage the saved page itself has


def test_chinese_pages_with_wrong_or_missing_charset(corpus_archive):
    pages = rows(corpus_archive)
    # UTF-8 bytes that declare gb2312
    for name in ("gne-zh/tests/163/9.html", "gne-zh/tests/hexun/1.html", "gne-zh/tests/people/1.html", "gne-zh/tests/qq/2.html"):
        row = pages[name]
        assert row["language"] == "zh", name
        assert re.search("[\u4e00-\u9fff]{4}", row["title"] or row["text"]), name
    expected = json.loads((CORPUS / "readability/test-pages/qq/expected-metadata.json").read_text(encoding="utf-8"))
    qq = pages["readability/test-pages/qq/source.html"]  # in the corpus (its metadata was just read): archived
    # the title, without the site name trafilatura strips
    assert len(qq["title"]) >= 10 and expected["title"].startswith(qq["title"])


def test_titles_match_the_reference_where_there_is_one(corpus_archive):
    pages = rows(corpus_archive)
    reference = json.loads((CORPUS / "gne-zh/result.json").read_text(encoding="utf-8"))
    checked = 0
    items = reference.items() if isinstance(reference, dict) else []
    for name, expected in items:
        key = next((k for k in pages if k.endswith(name) or name.endswith(k.split("tests/", 1)[-1])), None)
        if key and isinstance(expected, dict) and expected.get("title") and pages[key]["title"]:
            exp, got = expected["title"].strip(), pages[key]["title"].strip()
            assert exp[:6] in got or got[:6] in exp, (key, exp, got)
            checked += 1
    assert checked >= 5


def test_wechat_article_images_are_referenced(corpus_archive):
    pages = rows(corpus_archive)
    wechat = pages["gne-zh/tests/wechat/2.html"]
    assert wechat["title"] == "一日一技：在 Python 中实现延迟调用"
    images = json.loads(wechat["images"])
    # the article's own images (lazy data-src, extension-less), in order; the comment area
    # that trafilatura keeps by default may add WeChat's own icons after them
    assert images[0].startswith("https://mmbiz.qpic.cn/") and "wx_fmt=png" in images[0]
    assert sum(i.startswith("https://mmbiz.qpic.cn/") for i in images) >= 2
    assert all("#" not in i and i.startswith("https://") for i in images)


def test_english_pages_match_readability_titles(corpus_archive):
    """trafilatura and Readability disagree on some titles (h1 vs <title>); most must still agree."""
    pages = rows(corpus_archive)
    checked = agreed = 0
    for key, row in pages.items():
        if not key.startswith("readability/") or row["status"] != "archived":
            continue
        meta_file = CORPUS / key.replace("source.html", "expected-metadata.json")
        expected = json.loads(meta_file.read_text(encoding="utf-8")).get("title")
        if expected and row["title"]:
            checked += 1
            words = set(re.findall(r"\w+", expected.lower()))
            got = set(re.findall(r"\w+", row["title"].lower()))
            agreed += len(words & got) >= min(2, len(words))
    assert checked >= 20
    assert agreed >= 0.65 * checked, (agreed, checked)  # the synthetic cases (base-url*, 001) disagree by design


def test_stored_text_of_real_pages_is_plain(corpus_archive):
    """Real pages are full of links and images; `text` keeps their words, never their syntax or URLs."""
    pages = rows(corpus_archive)
    linked = 0
    for name, row in pages.items():
        if row["status"] != "archived":
            continue
        assert "](" not in row["text"] and "![" not in row["text"], name
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", row["text"]), name
        for image in json.loads(row["images"] or "[]"):
            assert image not in row["text"], (name, image)
        if "](" in (row["markdown"] or ""):
            linked += 1
        # the reader's Markdown carries the same article: no boilerplate the text does not have
        shown = re.sub(r"\]\(<?[^)>]*>?\)", "]", re.sub(r"!\[[^\]]*\]\(<?[^)>]*>?\)", "", row["markdown"]))  # as rendered
        md_words = Counter(WORDS.findall(shown))
        text_words = Counter(WORDS.findall(row["text"]))
        assert sum((md_words & text_words).values()) >= 0.9 * sum(md_words.values()), name
    assert linked >= 20  # the Markdown does keep links and images
