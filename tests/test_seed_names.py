"""A reading list by the names a user types (issue 42 item 9): `--seed` takes the path typed to
`mirror fetch` (`../pocket_export.html`), the file's name alone when one list has it, the name
`mirror links` shows; `mirror links` shows that name; `export epub` without `--seed` is the whole
archive. Servers on 127.0.0.x."""

from __future__ import annotations

import json
import zipfile

import pytest

from mirror.seeds.names import SeedNameError, resolve_seed

from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def test_a_name_resolves_as_typed_as_a_path_or_by_its_file_name(tmp_path):
    known = ["seeds/004_662669093c051ded.txt", "notes/注意力.md", str(tmp_path.parent / "pocket_export.html"), "(command line)"]
    assert resolve_seed("notes/注意力.md", known) == "notes/注意力.md"
    assert resolve_seed("注意力.md", known) == "notes/注意力.md"
    assert resolve_seed("004_662669093c051ded.txt", known) == "seeds/004_662669093c051ded.txt"
    assert resolve_seed("./seeds/004_662669093c051ded.txt", known, base=tmp_path) == "seeds/004_662669093c051ded.txt"
    assert resolve_seed("../pocket_export.html", known, base=tmp_path) == str(tmp_path.parent / "pocket_export.html")
    assert resolve_seed("pocket_export.html", known) == str(tmp_path.parent / "pocket_export.html")
    assert resolve_seed("(command line)", known) == "(command line)"
    with pytest.raises(SeedNameError, match="could be any of"):
        resolve_seed("list.md", ["a/list.md", "b/list.md"])
    with pytest.raises(SeedNameError, match="no reading list 'nope.md' in this archive; it has"):
        resolve_seed("nope.md", known)


@pytest.fixture
def pocket(tmp_path, web, cli, monkeypatch):
    """A Pocket export beside the working folder, fetched as `mirror fetch ../pocket_export.html`."""
    urls = [web.add(f"/p{n}", article(f"收藏 {n}", f"第 {n} 篇收藏的文章。")) for n in range(2)]
    export = tmp_path / "pocket_export.html"
    export.write_text(
        "<!DOCTYPE html><html><body><h1>Unread</h1><ul>"
        + "".join(f'<li><a href="{url}" time_added="1700000000" tags="ml">收藏 {n}</a></li>' for n, url in enumerate(urls))
        + "</ul></body></html>",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert cli("fetch", "../pocket_export.html", *QUICK).exit_code == 0
    return export


@pytest.mark.parametrize("typed", ["../pocket_export.html", "pocket_export.html", "{absolute}"])
def test_seed_takes_the_path_typed_or_the_file_name(cli, pocket, typed):
    typed = typed.format(absolute=pocket)
    result = cli("check", "--older-than", "0", *QUICK, "--seed", typed, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checked"] == 2
    assert cli("export", "markdown", "vault", "--seed", typed).exit_code == 0
    hits = json.loads(cli("search", "收藏", "--seed", typed, "--json").stdout)
    assert len(hits) == 2


def test_an_unknown_seed_names_the_lists_there_are(cli, pocket):
    result = cli("export", "wacz", "x.wacz", "--seed", "elsewhere.html")
    assert result.exit_code == 2 and "no reading list 'elsewhere.html'" in result.output and "pocket_export.html" in result.output


def test_links_shows_the_seed_as_seed_takes_it(cli, tmp_path, web):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "004_list.txt").write_text(f"{web.url('/a')}\n", encoding="utf-8")
    result = cli("links", "seeds")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()  # piped: tab-separated, one link a line
    assert lines[1].startswith("seeds/004_list.txt:1\t"), lines
    seed = lines[1].split("\t")[0].rsplit(":", 1)[0]
    assert cli("fetch", "seeds", *QUICK).exit_code == 0
    assert cli("check", "--older-than", "0", *QUICK, "--seed", seed).exit_code == 0


def test_epub_without_a_seed_is_the_whole_archive(cli, tmp_path, web):
    one = web.add("/one", article("第一本", "第一个列表的文章。"))
    two = web.add("/two", article("第二本", "第二个列表的文章。"))
    (tmp_path / "a.md").write_text(f"# 甲\n- {one}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"- {two}\n- {one}\n", encoding="utf-8")
    assert cli("fetch", "a.md", "b.md", *QUICK).exit_code == 0
    result = cli("export", "epub", "all.epub")
    assert result.exit_code == 0 and "2 chapters" in result.output, result.output
    with zipfile.ZipFile(tmp_path / "all.epub") as book:
        nav = book.read(next(n for n in book.namelist() if n.endswith("nav.xhtml"))).decode()
    assert nav.index("a.md") < nav.index("甲") < nav.index("第一本") < nav.index("b.md") < nav.index("第二本")
    assert nav.count("第一本") == 1  # each article once, where a list first links it
    assert cli("export", "epub", "a.epub", "--seed", "a.md").exit_code == 0
