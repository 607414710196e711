"""Issue 44 item 12: the Markdown adds nothing the article has not.

The page's own white space came through trafilatura into the Markdown: a comment's link on a line
of its own after eight spaces, sub-items six spaces in. Under CommonMark four leading spaces open
a code block, which shows the link's Markdown, its target with it, as text (most of what lowered
the Markdown's precision against the text's on the English benchmark pages). Only a list's
nesting and a fence's lines keep their indentation."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from mirror.extract import extract
from mirror.extract.markdown import unindent

from .helpers import CORPUS


def code_blocks(markdown: str) -> list[str]:
    return re.findall(r"<pre><code>(.*?)</code></pre>", MarkdownIt("commonmark").render(markdown), re.S)


def test_a_real_page_s_indented_comment_links_are_no_code_blocks():
    page = CORPUS / "dragnet" / "input" / "T50.html"
    if not page.is_file():
        pytest.skip("the corpus page dragnet/input/T50.html is not in ../shared/corpus")
    article = extract(page.read_bytes(), "http://127.0.0.1/T50/", "text/html")
    assert "Add comment" in article.markdown
    assert not [block for block in code_blocks(article.markdown) if "](http" in block]


def test_list_nesting_and_fenced_code_keep_their_indentation():
    markdown = "- one\n      - sub\n      - sibling\n- two\n\n        [a link](http://example.com/)\n\n```\n    code\n```\n"
    assert unindent(markdown) == "- one\n  - sub\n  - sibling\n- two\n\n  [a link](http://example.com/)\n\n```\n    code\n```"
    html = MarkdownIt("commonmark").render(unindent(markdown))
    assert html.count("<ul>") == 2 and '<a href="http://example.com/">a link</a>' in html and "<pre><code>    code" in html
