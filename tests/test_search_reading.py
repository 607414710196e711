"""`mirror search` as a person reads it (issue 42, item 14): `OR` and `title:`, a count of the
matches on a terminal, the matched words marked when piped, titles first for a one-character
word, and a search that finds nothing saying when matching pages are not fetched yet."""

from __future__ import annotations

import re

import pytest

from mirror.extract.article import Extraction
from mirror.search import build_match, search
from mirror.seeds import links_from_urls, read_seeds
from mirror.store import Archive

from .helpers import run_mirror

FILLER = "其他内容，与主题无关的文字。" * 30
PAGES = [  # url, title, text
    ("https://a.example/flash", "FlashAttention 原理", "分块计算减少显存访问。" + FILLER),
    ("https://a.example/paged", "PagedAttention 与推理", "显存按页管理，像操作系统的虚拟内存。" + FILLER),
    ("https://a.example/ring", "环形注意力", "Ring Attention 把长序列分到多张卡上。" + FILLER),
    ("https://a.example/body-only", "无关的标题", "正文里提到了显存三次：显存，显存，显存。"),  # short, and the character four times
    ("https://a.example/title-1", "显卡选购", FILLER * 3),  # long: bm25 weighs the title's one match against all of it
    ("https://a.example/title-2", "显示器", FILLER * 3),
]


@pytest.fixture
def archive(tmp_path):
    with Archive(tmp_path / "archive") as store:
        store.record_inventory(links_from_urls([url for url, _, _ in PAGES]))
        for url, title, text in PAGES:
            store.save_extraction(url, Extraction(status="archived", kind="html", title=title, text=text, markdown=text))
    return tmp_path / "archive"


def urls(archive, query: str) -> list[str]:
    with Archive(archive) as store:
        return [hit.url for hit in search(store.db, query, limit=100)]


def test_or_matches_either_word(archive):
    assert set(urls(archive, "FlashAttention OR PagedAttention")) == {"https://a.example/flash", "https://a.example/paged"}
    assert set(urls(archive, "FlashAttention OR PagedAttention 显存")) == {"https://a.example/flash", "https://a.example/paged"}
    assert urls(archive, "or") == urls(archive, "OR") == []  # alone, OR is a word (none of these pages has it)
    assert build_match("a OR b") == '("a" OR "b")'


def test_title_matches_titles_only(archive):
    assert set(urls(archive, "显存")) == {"https://a.example/flash", "https://a.example/paged", "https://a.example/body-only"}
    assert urls(archive, "title:显存") == []
    assert urls(archive, "title:注意力") == ["https://a.example/ring"]
    assert urls(archive, 'title:"Ring Attention"') == []  # (in the text only)
    assert urls(archive, "title:flash*") == ["https://a.example/flash"]
    assert set(urls(archive, "title:显 显存")) == set()
    assert set(urls(archive, "title:显")) == {"https://a.example/title-1", "https://a.example/title-2"}


def test_a_one_character_word_ranks_titles_first(archive):
    found = urls(archive, "显")
    assert set(found[:2]) == {"https://a.example/title-1", "https://a.example/title-2"}, found
    assert found.index("https://a.example/body-only") > 1


def test_a_terminal_gets_a_count_and_a_pipe_gets_marks(archive, tmp_path):
    terminal = run_mirror("search", "显存", "--limit", "2", "--archive", str(archive), cwd=tmp_path, env={"TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert terminal.returncode == 0, terminal.stderr
    plain = re.sub(r"\x1b\[[0-9;]*m", "", terminal.stdout)
    assert "3 articles match; the best 2 shown (--limit shows more)" in plain
    piped = run_mirror("search", "显存", "--archive", str(archive), cwd=tmp_path)
    assert "\x1b" not in piped.stdout and "[显存]" in piped.stdout
    assert "articles match" not in piped.stdout  # (piped: the hits alone, for a script)


def test_no_match_says_what_is_not_fetched_yet(tmp_path):
    (tmp_path / "list.md").write_text("- [Mixtral 论文](https://b.example/mixtral)\n- [别的](https://b.example/other)\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as store:
        store.record_inventory(read_seeds([tmp_path / "list.md"], base=tmp_path))
    result = run_mirror("search", "mixtral", cwd=tmp_path)
    assert result.returncode == 0
    assert "no saved article matches 'mixtral'; 1 page not fetched yet has these words in its link title or address" in result.stderr
    other = run_mirror("search", "量子", cwd=tmp_path)
    assert "no saved article matches '量子' (2 pages not fetched yet: `mirror fetch` fetches them)" in other.stderr
