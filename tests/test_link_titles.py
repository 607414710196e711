"""Link titles from Markdown and prose as a reader sees them (issue 42, item 13): a reference
link's text, no title from an autolink's brackets, none from the words of a sentence around a
bare URL in parentheses."""

from __future__ import annotations

import json

from mirror.seeds.text import parse_text

from .helpers import run_mirror


def titles(text: str) -> dict[str, str | None]:
    return {link.url: link.title for link in parse_text(text, "list.md")}


def test_a_reference_link_is_titled_by_its_text():
    text = (
        "# 注意力\n\n"
        "- [FlashAttention 论文][fa]\n"
        "- [PagedAttention][]\n"
        "- [Ring Attention] is the third\n\n"
        "[fa]: https://arxiv.org/abs/2205.14135\n"
        "[pagedattention]: https://arxiv.org/abs/2309.06180\n"
        "[Ring  attention]: https://arxiv.org/abs/2310.01889\n"
        "[unused]: https://example.com/unused\n"
        '[titled]: https://example.com/titled "Its own title"\n'
    )
    links = {link.url: link for link in parse_text(text, "list.md")}
    assert links["https://arxiv.org/abs/2205.14135"].title == "FlashAttention 论文"
    assert links["https://arxiv.org/abs/2309.06180"].title == "PagedAttention"
    assert links["https://arxiv.org/abs/2310.01889"].title == "Ring Attention"  # a shortcut link: its text is its label, as written there
    assert links["https://example.com/unused"].title == "unused"
    assert links["https://example.com/titled"].title == "Its own title"
    assert {link.section for link in links.values()} == {"注意力"}  # a line of reference links is no heading


def test_an_autolink_gets_no_bracket_for_a_title():
    assert titles("- <https://github.com/Dao-AILab/flash-attention>\n") == {"https://github.com/Dao-AILab/flash-attention": None}
    assert titles("FlashAttention <https://github.com/Dao-AILab/flash-attention>\n") == {
        "https://github.com/Dao-AILab/flash-attention": "FlashAttention"
    }


def test_urls_in_the_parentheses_of_a_sentence_take_no_words_of_it():
    found = titles("另见（https://example.com/a）和 https://example.com/b\n")
    assert found == {"https://example.com/a": None, "https://example.com/b": None}
    assert titles("see (https://example.com/c) and more\n") == {"https://example.com/c": None}


def test_a_title_before_a_url_in_parentheses_stays_its_title():
    assert titles("- FlashAttention (https://arxiv.org/abs/2205.14135)\n") == {"https://arxiv.org/abs/2205.14135": "FlashAttention"}
    assert titles("- FlashAttention（https://arxiv.org/abs/2205.14135）- 论文\n") == {"https://arxiv.org/abs/2205.14135": "FlashAttention"}
    assert titles("| Stack Overflow | https://stackoverflow.com/ |\n") == {"https://stackoverflow.com/": "Stack Overflow"}


def test_mirror_links_lists_those_titles(tmp_path):
    (tmp_path / "list.md").write_text(
        "- [FlashAttention 论文][fa]\n- <https://github.com/Dao-AILab/flash-attention>\n\n另见（https://example.com/a）和 https://example.com/b\n\n"
        "[fa]: https://arxiv.org/abs/2205.14135\n",
        encoding="utf-8",
    )
    result = run_mirror("links", "list.md", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {link["url"]: link["title"] for link in json.loads(result.stdout)} == {
        "https://arxiv.org/abs/2205.14135": "FlashAttention 论文",
        "https://github.com/Dao-AILab/flash-attention": None,
        "https://example.com/a": None,
        "https://example.com/b": None,
    }
