"""`mirror export markdown` (issue 28 item 2): a folder of Markdown that opens as a notes vault.

From an archive fetched from a local server: one file per article with YAML front matter, every
image link resolving to a file saved beside it, one index per reading list in its order and
sections, readable file names (Chinese kept, unsafe characters replaced, collisions numbered),
and a re-export that rewrites nothing that did not change."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .webserver import PNG, article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def front_matter(text: str) -> dict:
    block = text.split("---\n")[1]
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in block.strip().splitlines())}


def test_markdown_export_is_a_vault_whose_images_all_resolve(cli, tmp_path, web):
    web.add("/pic.png", PNG, content_type="image/png")
    pages = {
        "pictured": web.add(
            "/pictured", article("带图的文章", '<img src="/pic.png" alt="示意图"> 正文配了一张图。<img src="/missing.png" alt="丢了">')
        ),
        "unsafe": web.add("/unsafe", article('Q&A: what/why? <"quoted">', "标题里有不能做文件名的字符。")),
        "same1": web.add("/same1", article("同名文章", "第一篇。")),
        "same2": web.add("/same2", article("同名文章", "第二篇，标题一样。")),
    }
    (tmp_path / "list.md").write_text(
        f"# 有图\n- {pages['pictured']}\n# 其他\n- {pages['unsafe']}\n- {pages['same2']}\n- {pages['same1']}\n", encoding="utf-8"
    )
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    result = cli("export", "markdown", "vault")
    assert result.exit_code == 0, result.output
    vault = tmp_path / "vault"
    names = sorted(p.name for p in vault.glob("*.md"))
    assert names == sorted(["带图的文章.md", "Q&A what why quoted.md", "同名文章.md", "同名文章 (2).md", "list (reading list).md"])
    pictured = (vault / "带图的文章.md").read_text(encoding="utf-8")
    meta = front_matter(pictured)
    assert meta["title"] == "带图的文章" and meta["url"] == pages["pictured"] and meta["reading_lists"] == ["list.md"]
    assert meta["sections"] == ["有图"] and meta["captured"] and meta["language"] == "zh"
    links = re.findall(r"!\[[^\]]*\]\(<([^>]+)>\)", pictured)
    assert links and all((vault / link).read_bytes() == PNG for link in links)  # every image link is a file
    assert "image not archived: 丢了" in pictured
    index = (vault / "list (reading list).md").read_text(encoding="utf-8")
    assert index.index("## 有图") < index.index("带图的文章.md") < index.index("## 其他") < index.index("同名文章 (2).md")
    assert all((vault / target).is_file() for target in re.findall(r"\]\(<([^>]+)>\)", index))
    again = cli("export", "markdown", "vault")
    assert "0 files written" in again.output


def test_export_filters_and_bad_input(cli, tmp_path, web):
    url = web.add("/one", article("一篇"))
    assert cli("fetch", url, *QUICK).exit_code == 0
    assert cli("export", "markdown", "v", "--site", "example.com").exit_code == 0
    assert list(Path(tmp_path / "v").glob("*.md")) == []
    bad = cli("export", "markdown", "v", "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.output
    (tmp_path / "file").write_text("x")
    assert cli("export", "markdown", "file").exit_code == 2
