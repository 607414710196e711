"""Layout tables are not data tables (issue 42, item 6; issue 44, item 4): a 2005-era page laid out
in nested tables reads as its paragraphs everywhere (the stored text and Markdown, search
snippets, `mirror show`, the Markdown and EPUB exports, the reader in chromium), and a real data
table keeps a header row, so that its Markdown is a table."""

from __future__ import annotations

import json
import re
import zipfile

from markdown_it import MarkdownIt

from mirror.extract.article import extract
from mirror.extract.tables import is_layout_table

from .browsing import browser_page, fetch, shot
from .helpers import CORPUS, mirror_serve, run_mirror
from .webserver import PNG

PARAGRAPHS = [
    "　　据新华社报道，中国互联网用户对播客的兴趣迅速上升，多家门户网站在今年推出了播客频道，吸引了大量年轻用户收听和制作节目。",
    "　　业内人士认为，播客降低了个人发布音频节目的门槛，一台电脑和一个麦克风就可以录制节目，再通过订阅的方式把节目送到听众手中。",
    "　　不过，带宽成本和版权问题仍然困扰着播客网站。一些网站已经开始尝试广告分成，希望找到可持续的商业模式，让节目制作者获得收入。",
]

# a news page as portals wrote them around 2005: navigation, spacers, columns and the article, all tables
LAYOUT_PAGE = f"""<html><head><meta http-equiv="Content-Type" content="text/html; charset=gb2312">
<title>播客热潮席卷中国互联网</title></head>
<body leftmargin=0 topmargin=0>
<table width=760 border=0 cellpadding=0 cellspacing=0 align=center><tr><td><img src="/images/top_banner.gif" width=760 height=80></td></tr></table>
<table width=760 border=0 cellpadding=0 cellspacing=0 align=center><tr>
 <td width=160 valign=top bgcolor=#EEEEEE>
  <table width=100% border=0 cellpadding=2 cellspacing=0>
   <tr><td><img src="/images/dot.gif" width=5 height=5> <a href="/">企业服务首页</a></td></tr>
   <tr><td><img src="/images/dot.gif" width=5 height=5> <a href="/news/">产业资讯</a></td></tr>
   <tr><td><img src="/images/dot.gif" width=5 height=5> <a href="/tech/">技术前沿</a></td></tr>
   <tr><td height=10></td></tr>
  </table>
 </td>
 <td width=1 bgcolor=#CCCCCC><img src="/images/spacer.gif" width=1 height=1></td>
 <td width=599 valign=top>
  <table width=100% border=0 cellpadding=6 cellspacing=0>
   <tr><td class=title align=center><b>播客热潮席卷中国互联网</b></td></tr>
   <tr><td align=center><font color=#999999>2005年11月28日 来源：新华网</font></td></tr>
   <tr><td height=1 bgcolor=#CCCCCC></td></tr>
   <tr><td class=content>{"<br><br>".join(PARAGRAPHS)}</td></tr>
  </table>
 </td></tr></table>
<table width=760 align=center><tr><td align=center>版权所有 © 2005 产业网</td></tr></table>
</body></html>"""

# an article with data tables: one whose header row is <th>s, one with none
DATA_PAGE = """<html><head><meta charset="utf-8"><title>三种显卡的显存</title></head><body><article>
<h1>三种显卡的显存</h1>
<p>训练大模型时，显存决定了能放下多大的批次。下面比较三种常见显卡的显存和带宽，数字来自厂商的公开资料，供选型时参考。</p>
<table><tr><th>显卡</th><th>显存</th><th>带宽</th></tr>
<tr><td>A100</td><td>80 GB</td><td>2039 GB/s</td></tr><tr><td>H100</td><td>80 GB</td><td>3350 GB/s</td></tr>
<tr><td>RTX 4090</td><td>24 GB</td><td>1008 GB/s</td></tr></table>
<p>如果只看价格，消费级显卡的每 GB 显存最便宜，但它们的互联带宽限制了多卡训练的效率，这一点在选型时同样需要考虑。</p>
<table><tr><td>年份</td><td>2020</td><td>2022</td></tr><tr><td>型号</td><td>A100</td><td>H100</td></tr>
<tr><td>工艺</td><td>7 nm</td><td>4 nm</td></tr></table>
<p>总之，显存容量和带宽都要看，单看其中一项容易选错。希望这份比较对你有帮助，也欢迎在评论里补充其他显卡的数据。</p>
</article></body></html>"""


def _no_layout_pipes(text: str) -> None:
    assert "|" not in text, text
    assert not re.search(r"\|\s*\|", text)


def test_a_page_laid_out_in_tables_reads_as_its_paragraphs():
    result = extract(LAYOUT_PAGE.encode("gb18030"), "http://127.0.0.1/news/1.html", "text/html")
    _no_layout_pipes(result.text)
    _no_layout_pipes(result.markdown)
    blocks = [block.strip() for block in result.markdown.split("\n\n")]
    for paragraph in PARAGRAPHS:  # each paragraph of the article a paragraph of its own
        assert paragraph.strip() in blocks, result.markdown
    assert result.text.count("\n") >= 2
    assert "spacer.gif" not in result.markdown and "dot.gif" not in result.markdown  # spacers and bullets are no pictures


def test_data_tables_stay_tables_with_a_header_row():
    result = extract(DATA_PAGE.encode(), "http://127.0.0.1/gpu.html", "text/html")
    rendered = MarkdownIt("commonmark").enable("table").render(result.markdown)
    assert rendered.count("<table>") == 2, result.markdown
    assert "<th>显卡</th>" in rendered and "<td>3350 GB/s</td>" in rendered
    assert "<th>年份</th>" in rendered and "<td>4 nm</td>" in rendered  # no <th> in the page: its first row heads it
    assert "---" not in result.text  # the plain text has the rows, not Markdown's header line
    assert "A100" in result.text and "RTX 4090" in result.text


def test_what_makes_a_table_a_layout_table():
    from lxml.html import fragment_fromstring

    def layout(markup: str) -> bool:
        return is_layout_table(fragment_fromstring(markup))

    assert layout("<table><tr><td>only one row</td><td>two cells</td></tr></table>")
    assert layout("<table><tr><td>one column</td></tr><tr><td>two rows</td></tr></table>")
    assert layout(
        "<table><tr><td><table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table></td><td>x</td></tr><tr><td>y</td><td>z</td></tr></table>"
    )
    assert layout("<table><tr><td><p>a paragraph</p></td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")
    assert layout("<table><tr><td></td><td></td><td>a</td></tr><tr><td></td><td></td><td>b</td></tr></table>")  # mostly empty: spacers
    assert layout("<table role=presentation><tr><th>a</th><th>b</th></tr><tr><td>c</td><td>d</td></tr></table>")
    assert layout(f"<table><tr><td>{'长' * 400}</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")  # prose in a cell
    assert not layout("<table><tr><th>a</th><th>b</th></tr><tr><td>c</td><td>d</td></tr></table>")
    assert not layout("<table><caption>Sizes</caption><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")
    assert not layout("<table><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>")


def test_a_corpus_page_laid_out_in_tables_reads_as_paragraphs(corpus_server):
    """zsnews: a local news site's article page, every part of it in nested tables."""
    body = (CORPUS / "gne-zh/tests/zsnews/1.html").read_bytes()
    result = extract(body, f"{corpus_server}/gne-zh/tests/zsnews/1.html", "text/html")
    _no_layout_pipes(result.markdown)
    assert "2019年2月27日下午" in result.text and "为中山经济发展提供创新驱动力" in result.text
    paragraphs = [block for block in result.markdown.split("\n\n") if "调研" in block]
    assert len(paragraphs) >= 2, result.markdown  # the article's paragraphs, not one merged line


def test_a_table_layout_page_everywhere_a_user_reads_it(tmp_path, web):
    """Fetched, searched, shown, exported and read in chromium: paragraphs, never rows of pipes."""
    url = web.add("/news/2005/podcast.html", LAYOUT_PAGE.encode("gb18030"), content_type="text/html")
    web.add("/images/top_banner.gif", PNG, content_type="image/png")  # (the spacers and bullets are not even asked for)
    web.add("/data.html", DATA_PAGE.encode(), content_type="text/html; charset=utf-8")
    (tmp_path / "list.md").write_text(f"# 2005\n- [播客]({url})\n- [显存表]({web.url('/data.html')})\n", encoding="utf-8")
    fetch(tmp_path, "list.md")
    found = run_mirror("search", "播客", cwd=tmp_path)
    assert found.returncode == 0 and "播客热潮" in found.stdout, found.stderr
    _no_layout_pipes(found.stdout)
    hits = json.loads(run_mirror("search", "播客", "--json", cwd=tmp_path).stdout)
    shown = run_mirror("show", str(hits[0]["id"]), cwd=tmp_path)
    _no_layout_pipes(shown.stdout)
    assert all(paragraph.strip() in shown.stdout for paragraph in PARAGRAPHS)
    assert run_mirror("export", "markdown", "notes", cwd=tmp_path).returncode == 0
    note = next(path for path in (tmp_path / "notes").glob("*.md") if "播客" in path.name)
    _no_layout_pipes(note.read_text(encoding="utf-8"))
    assert run_mirror("export", "epub", "book.epub", "--seed", "list.md", cwd=tmp_path).returncode == 0
    with zipfile.ZipFile(tmp_path / "book.epub") as book:
        chapters = [book.read(name).decode() for name in book.namelist() if name.endswith(".xhtml") and "chapter" in name]
    layout_chapter = next(chapter for chapter in chapters if "播客热潮" in chapter)
    assert "<table" not in layout_chapter and "| |" not in layout_chapter and layout_chapter.count("<p>") >= 3
    assert "<table>" in next(chapter for chapter in chapters if "显存" in chapter)  # the data table stays one
    artifacts = tmp_path / "artifacts"
    web.shutdown()
    with mirror_serve(tmp_path / "archive") as root, browser_page(artifacts) as page:
        page.goto(f"{root}/-/mirror/page/{hits[0]['id']}")
        article = page.locator("article.mirror-article")
        assert article.locator("table").count() == 0
        assert article.locator("p").count() >= 3
        assert "|" not in article.inner_text()
        assert article.locator(".missing-image").count() == 0  # no spacer or bullet stands in for a picture
        shot(page, artifacts, "layout-table-reader")
        data = json.loads(run_mirror("search", "显存", "--json", cwd=tmp_path).stdout)[0]
        page.goto(f"{root}/-/mirror/page/{data['id']}")
        assert page.locator("article.mirror-article table thead th").count() == 6
        shot(page, artifacts, "data-table-reader")
