"""HTML character references in titles are decoded once, where a title is taken (extraction, a
page's metadata, a reading list's link titles), and escaped once where it is shown (issue 42,
item 7): "多维博客 &raquo; 播客热潮" is "多维博客 » 播客热潮" in search, show, the reader, the
Markdown export's file names and the EPUB's table of contents."""

from __future__ import annotations

import json
import urllib.request
import zipfile

from mirror.extract.article import extract
from mirror.seeds.imports import as_links
from mirror.seeds.text import parse_text

from .browsing import fetch
from .helpers import mirror_serve, run_mirror

TITLE = "多维博客 » 播客热潮"
BODY = "".join(f"<p>第{n}段：播客在中文互联网上流行起来，越来越多的人开始录制自己的节目，并通过订阅把它们送到听众手里。</p>" for n in range(1, 5))
# the title escaped twice, as blog software of the time wrote it (a browser shows "&raquo;"; readers of it mean »)
PAGE = f"<html><head><meta charset='utf-8'><title>多维博客 &amp;raquo; 播客热潮</title></head><body><article>{BODY}</article></body></html>"


def test_a_title_escaped_twice_is_decoded_once():
    result = extract(PAGE.encode(), "http://127.0.0.1/blog/podcast", "text/html")
    assert result.title == TITLE
    plain = extract(b"<html><head><title>A &amp; B &lt;3</title></head><body></body></html>", "http://127.0.0.1/x", "text/html")
    assert plain.title == "A & B <3"  # once: the text "&lt;3" a page meant stays "<3", not a tag


def test_link_titles_are_decoded_once():
    [link] = parse_text("- [Tom &amp; Jerry &raquo; 第一集](https://example.com/tj)\n", "list.md")
    assert link.title == "Tom & Jerry » 第一集"
    [exported] = as_links([("https://example.com/p", 1, 1, "多维博客 &raquo; 播客热潮", None, None, None)], "pocket.html")
    assert exported.title == "多维博客 » 播客热潮"


def test_the_title_reads_right_wherever_it_is_shown(tmp_path, web):
    url = web.add("/blog/podcast", PAGE.encode(), content_type="text/html; charset=utf-8")
    (tmp_path / "list.md").write_text(f"# 播客\n- {url}\n", encoding="utf-8")
    fetch(tmp_path, "list.md")
    found = run_mirror("search", "播客", cwd=tmp_path)
    assert TITLE in found.stdout and "&raquo;" not in found.stdout
    [hit] = json.loads(run_mirror("search", "播客", "--json", cwd=tmp_path).stdout)
    assert hit["title"] == TITLE
    shown = run_mirror("show", str(hit["id"]), cwd=tmp_path)
    assert shown.stdout.startswith(TITLE + "\n") and "&raquo;" not in shown.stdout
    assert run_mirror("export", "markdown", "notes", cwd=tmp_path).returncode == 0
    assert [path.name for path in (tmp_path / "notes").glob("多维博客*.md")] == [f"{TITLE}.md"]
    assert run_mirror("export", "epub", "book.epub", "--seed", "list.md", cwd=tmp_path).returncode == 0
    with zipfile.ZipFile(tmp_path / "book.epub") as book:
        names = book.namelist()
        nav = book.read(next(name for name in names if name.endswith("nav.xhtml"))).decode()
        ncx = book.read(next(name for name in names if name.endswith(".ncx"))).decode()
    assert TITLE in nav and TITLE in ncx and "&amp;raquo;" not in nav + ncx
    with mirror_serve(tmp_path / "archive") as root:
        with urllib.request.urlopen(f"{root}/-/mirror/page/{hit['id']}") as response:
            reader = response.read().decode()
    assert f"<h1>{TITLE}</h1>" in reader and "&amp;raquo;" not in reader
