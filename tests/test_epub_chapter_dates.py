"""The EPUB's chapter heads show dates as people read them (issue 42, item 16), the ISO value
kept in `<time datetime>`."""

from __future__ import annotations

import re
import zipfile

from .browsing import fetch
from .helpers import run_mirror

PAGE = """<html><head><meta charset="utf-8"><title>显存优化</title>
<meta property="article:published_time" content="2026-11-28T12:13:46+00:00"></head>
<body><article><h1>显存优化</h1>{}</article></body></html>""".format(
    "<p>显存是训练大模型时最紧张的资源，激活重计算、混合精度和零冗余优化器是三种常用的节省办法，本文逐一介绍。</p>" * 3
)


def test_chapter_dates_are_readable(tmp_path, web):
    url = web.add("/dated", PAGE.encode())
    (tmp_path / "list.md").write_text(f"- {url}\n", encoding="utf-8")
    fetch(tmp_path, "list.md")
    assert run_mirror("export", "epub", "book.epub", "--seed", "list.md", cwd=tmp_path).returncode == 0
    with zipfile.ZipFile(tmp_path / "book.epub") as book:
        chapter = next(book.read(name).decode() for name in book.namelist() if re.search(r"chapter-\d+\.xhtml$", name))
    head = chapter[: chapter.index("</h1>") + 600]
    shown = re.sub(r"<[^>]+>", " ", head)
    assert "2026-11-28" in shown and not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", shown), shown  # no raw ISO timestamp on the page
    assert re.search(r"saved\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC", shown), shown
    assert '<time datetime="2026-11-28">2026-11-28</time>' in head  # the published date, the ISO value kept
    assert re.search(r'\(saved <time datetime="\d{4}-\d\d-\d\dT[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC</time>\)', head), head
