"""The Markdown export's reading-list index is the user's list (issue 42 item 10): every link in
its order and sections, an exported article linking to its file, a failed, pending or skipped
link kept, marked, and linking to its original URL. Servers on 127.0.0.x."""

from __future__ import annotations

import re

from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def test_the_index_keeps_every_link_in_its_order_and_sections(cli, tmp_path, web):
    good = web.add("/good", article("好文章", "能读的文章。"))
    dup = web.add("/dup", b"", status=301, Location="/good")
    missing = web.url("/missing")
    other = web.add("/other", article("另一篇", "另一个小节里的文章。"))
    (tmp_path / "list.md").write_text(
        f"# 能读\n- [好文章]({good})\n- [同一篇]({dup})\n# 坏了\n- [找不到]({missing})\n- 本地笔记 ./notes.md\n# 另外\n- {other}\n",
        encoding="utf-8",
    )
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    later = web.add("/later", article("以后", "还没抓的文章。"))
    with (tmp_path / "list.md").open("a", encoding="utf-8") as list_file:
        list_file.write(f"- [以后再读]({later})\n")
    assert cli("links", "list.md").exit_code == 0  # recorded, not fetched yet
    result = cli("export", "markdown", "vault")
    assert result.exit_code == 0, result.output
    index = (tmp_path / "vault" / "list (reading list).md").read_text(encoding="utf-8")
    order = [
        "# list.md",
        "## 能读",
        "[好文章](<好文章.md>)",
        "[同一篇](<好文章.md>)",
        "## 坏了",
        "[找不到](<",
        "./notes.md",
        "## 另外",
        "另一篇.md",
        "以后再读",
    ]
    positions = [index.index(part) for part in order]
    assert positions == sorted(positions), index
    failed = next(line for line in index.splitlines() if "找不到" in line)
    assert f"(<{missing}>)" in failed and "*(failed: HTTP 404" in failed, failed
    skipped = next(line for line in index.splitlines() if "notes.md" in line)
    assert "](" not in skipped and "not a web page" in skipped, skipped  # no link to a non-web URL
    pending = next(line for line in index.splitlines() if "以后再读" in line)
    assert f"(<{later}>)" in pending and "not fetched yet" in pending
    for target in re.findall(r"\]\(<([^>]+)>\)", index):
        assert target.startswith("http://") or (tmp_path / "vault" / target).is_file(), target


def test_a_filtered_export_indexes_the_lists_of_its_articles(cli, tmp_path, web, web2):
    (tmp_path / "one.md").write_text(f"- {web.add('/a', article('甲', '甲文。'))}\n", encoding="utf-8")
    (tmp_path / "two.md").write_text(f"- {web2.add('/b', article('乙', '乙文。'))}\n", encoding="utf-8")
    assert cli("fetch", "one.md", "two.md", *QUICK).exit_code == 0
    assert cli("export", "markdown", "vault", "--site", "127.0.0.2").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "vault").glob("*(reading list).md")) == ["two (reading list).md"]
