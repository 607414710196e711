"""Issue 44 items 4 and 7-9: a Markdown export that no title or "image" can break, and that
Markdown readers render as written.

File names are unique against every name taken in the export (articles and indexes alike, as a
case-insensitive file system compares them), at most ~200 bytes of UTF-8 however the title is
written (emoji, rare CJK), never a Windows device name, and an image is saved under the type its
bytes are. A note in place of an image closes its emphasis wherever it stands (rendered by
markdown-it-py with CommonMark's rules), and an import's tags are in the front matter."""

from __future__ import annotations

import json
import re

from markdown_it import MarkdownIt

from .webserver import PNG, article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def front_matter(text: str) -> dict:
    block = text.split("---\n")[1]
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in block.strip().splitlines())}


def test_names_taken_are_never_reused_and_the_count_of_files_is_true(cli, tmp_path, web):
    urls = [web.add(f"/{n}", article(title, f"第{n}篇。")) for n, title in enumerate(["Alpha", "Alpha", "Alpha (2)", "list (reading list)"])]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "list.md").write_text(f"# A\n- {urls[0]}\n- {urls[1]}\n", encoding="utf-8")
    (tmp_path / "b" / "list.md").write_text(f"# B\n- {urls[2]}\n- {urls[3]}\n", encoding="utf-8")
    assert cli("fetch", "a", "b", *QUICK).exit_code == 0
    result = cli("export", "markdown", "vault")
    assert result.exit_code == 0, result.output
    vault = tmp_path / "vault"
    files = sorted(p.name for p in vault.glob("*.md"))
    assert files == sorted(
        ["Alpha.md", "Alpha (2).md", "Alpha (2) (2).md", "list (reading list).md", "list (reading list) (2).md", "list (reading list) (3).md"]
    )
    bodies = {p.name: p.read_text(encoding="utf-8") for p in vault.glob("*.md")}
    articles = [front_matter(text)["url"] for text in bodies.values() if text.startswith("---\n")]
    assert sorted(articles) == sorted(urls)  # every article has a file of its own: none overwritten
    indexes = [text for text in bodies.values() if text.startswith("# ")]
    assert sorted(text.splitlines()[0] for text in indexes) == ["# a/list.md", "# b/list.md"]  # one index each
    assert f"{len(files)} files written" in result.output


def test_long_titles_are_cut_by_bytes_and_never_stop_the_export(cli, tmp_path, web):
    emoji = "🦊" * 80  # 320 bytes of UTF-8: past what a file system takes with ".md"
    rare = "𠀀𠀁𠀂" * 27  # CJK Extension B: four bytes a character
    urls = [web.add("/e", article(emoji)), web.add("/r", article(rare)), web.add("/after", article("后面的文章"))]
    assert cli("fetch", *urls, *QUICK).exit_code == 0
    result = cli("export", "markdown", "vault")
    assert result.exit_code == 0, result.output
    names = [p.name for p in (tmp_path / "vault").glob("*.md")]
    assert "后面的文章.md" in names and len(names) == 4  # and the index of the command line's links
    for name in names:
        assert len(name.encode("utf-8")) <= 200, name
        name.encode("utf-8").decode("utf-8")  # cut at a character's end
    assert any(name.startswith("🦊🦊") for name in names) and any(name.startswith("𠀀𠀁") for name in names)


def test_device_names_are_suffixed_and_images_named_by_their_bytes(cli, tmp_path, web):
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 64
    web.add("/2", PNG, content_type="text/html")  # a PNG the server calls HTML
    web.add("/3", jpeg, content_type="application/x-sh")
    web.add("/4", b"<html><body>404</body></html>", content_type="image/jpeg")  # an error page labelled an image
    body = '<img src="/2" alt="two"> 正文。<img src="/3" alt="three"> <img src="/4" alt="four">'
    titles = ("CON", "nul.txt", "com1", "LPT9 notes", "Console")
    urls = [web.add(f"/t{n}", article(name, body if name == "CON" else "")) for n, name in enumerate(titles)]
    assert cli("fetch", *urls, *QUICK).exit_code == 0
    assert cli("export", "markdown", "vault").exit_code == 0
    vault = tmp_path / "vault"
    names = sorted(p.name for p in vault.glob("*.md"))
    assert names == sorted(["CON_.md", "nul_.txt.md", "com1_.md", "LPT9 notes.md", "Console.md", "(command line) (reading list).md"])
    images = sorted(p.name for p in (vault / "assets" / "CON_").iterdir())
    assert images == ["1.png", "2.jpg"]  # never 2.html or 3.sh; the HTML labelled image/jpeg is no image
    text = (vault / "CON_.md").read_text(encoding="utf-8")
    assert "not an image: four" in text


def test_notes_in_place_of_images_close_under_commonmark_and_tags_are_in_the_front_matter(cli, tmp_path, web):
    body = '<img src="/gone.png" alt="">税收优惠政策到期后，<img src="/gone2.png" alt="图一。">企业所得税的税率恢复为百分之二十五。'
    url = web.add("/tax", article("税收优惠", body))
    (tmp_path / "pins.json").write_text(
        json.dumps([{"href": url, "description": "税收", "tags": "财政 税收 machine-learning", "time": "2024-01-02T03:04:05Z"}]), encoding="utf-8"
    )
    assert cli("fetch", "pins.json", *QUICK).exit_code == 0
    assert cli("export", "markdown", "vault").exit_code == 0
    text = (tmp_path / "vault" / "税收优惠.md").read_text(encoding="utf-8")
    assert front_matter(text)["tags"] == ["财政", "税收", "machine-learning"]
    rendered = MarkdownIt("commonmark").render(text.split("---\n", 2)[2])
    # each note is emphasised alone; the sentence after it is not
    assert re.findall(r"<em>(.*?)</em>", rendered) == ["[image not archived]", "[image not archived: 图一。]"], rendered
    assert "税收优惠政策到期后" in re.sub(r"<em>.*?</em>", "", rendered)
    assert "*" not in re.sub(r"<[^>]+>", "", rendered)  # no asterisk left over from an emphasis that did not close
