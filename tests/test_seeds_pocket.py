"""Pocket's HTML export read without an HTML parser (`seeds/_pocket.py`, issue 28's speed): the
same links as libxml2's tree gives, on a real-shaped export and on random documents; anything
off Pocket's shape is left to the parser."""

from __future__ import annotations

import random

import pytest

from mirror.seeds import html as seeds_html
from mirror.seeds._pocket import pocket_rows

# Pocket's own export, as it wrote it: tabs, the comment, a meta, two lists
EXPORT = """<!DOCTYPE html>
<html>
\t<!--So long and thanks for all the fish-->
\t<head>
\t\t<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
\t\t<title>Pocket Export</title>
\t</head>
\t<body>
\t\t<h1>Unread</h1>
\t\t<ul>
\t\t\t<li><a href="https://zhuanlan.zhihu.com/p/1?utm_source=pocket&amp;x=1" time_added="1700000000" tags="mlsys,注意力">FlashAttention 详解 &amp; 注释</a></li>
\t\t\t<li><a href="https://example.com/search?q=a&b=2" time_added="1700000100" tags="">Tom & Jerry&#39;s &quot;notes&quot; &lt;3</a></li>
\t\t\t<li><a href="https://example.com/empty" time_added="" tags=""></a></li>
\t\t\t<li><a href="   " time_added="1700000200" tags="x">no link</a></li>
\t\t</ul>
\t\t
\t\t<h1>Read Archive</h1>
\t\t<ul>
\t\t\t<li><a href="https://example.com/read" time_added="1690000000" tags="done">Read   one  </a></li>
\t\t</ul>
\t</body>
</html>
"""


def _tree(text: str):
    """The links libxml2's tree gives (the parser's path)."""
    root = seeds_html._root(seeds_html._closed(text).encode("utf-8"))
    if root is None:
        return []
    anchors, headings = seeds_html._anchors(root)
    return seeds_html.links_of(list(seeds_html._rows(root, anchors, headings)), "s")


def test_pocket_export_is_read_without_a_parser_and_gives_the_trees_links():
    assert pocket_rows(EXPORT, seeds_html._section_name) is not None
    links = seeds_html.parse_html(EXPORT, "s")
    assert links == _tree(EXPORT)
    assert [(link.url_as_written, link.title, link.section, link.tags, link.added) for link in links] == [
        ("https://zhuanlan.zhihu.com/p/1?utm_source=pocket&x=1", "FlashAttention 详解 & 注释", "Unread", "mlsys, 注意力", "2023-11-14T22:13:20+00:00"),
        ("https://example.com/search?q=a&b=2", "Tom & Jerry's \"notes\" <3", "Unread", None, "2023-11-14T22:15:00+00:00"),
        ("https://example.com/empty", None, "Unread", None, None),
        ("https://example.com/read", "Read one", "Read Archive", "done", "2023-07-22T04:26:40+00:00"),
    ]
    assert [link.line for link in links] == [11, 12, 13, 19]


@pytest.mark.parametrize("change", [
    ('tags="">Tom', 'tags="" data-x="1">Tom'),  # an attribute Pocket does not write
    ("<li><a", "<li ><a"),
    ("</ul>\n\t\t\n", "</ul></html>\n"),  # libxml2 reads nothing after </html>
    ("&amp; 注释", "&copy 注释"),  # a reference read in more than one way
    ("Read   one", "Read\x01one"),
    ("<h1>Unread</h1>", "<h2>Unread</h2>"),
    ("<!DOCTYPE html>", "<!DOCTYPE NETSCAPE-Bookmark-file-1>"),
])
def test_a_document_off_pockets_shape_is_left_to_the_parser(change):
    text = EXPORT.replace(*change)
    assert text != EXPORT
    assert pocket_rows(text, seeds_html._section_name) is None
    assert seeds_html.parse_html(text, "s") == _tree(text)


def test_a_long_export_keeps_each_links_own_line():
    """libxml2's HTML parser stops counting lines at 65,535; read from the text, each link keeps its line."""
    rows = "".join(f'<li><a href="https://example.com/{i}" time_added="1700000000" tags="">{i}</a></li>\n' for i in range(70_000))
    links = seeds_html.parse_html("<!DOCTYPE html><html><body><h1>Unread</h1><ul>\n" + rows + "</ul></body></html>\n", "s")
    assert len(links) == 70_000
    assert [(link.line, link.col) for link in links[-2:]] == [(70_000, 1), (70_001, 1)]


_VALUES = list("abcXYZ019 ;=#/?.:_-'>") + [
    "&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&#039;", "& ", "&=", "&b=2", "&a=", "&amp=1", "&not=", "注意", "力", "😀",
    "\xa0", "\u3000", "é", "\u200b", "\u2028"]
_TEXTS = [v for v in _VALUES if not (v[0] == "&" and v[1:2].isalnum())] + ['"']
_ODD = ['"', "&", "&copy", "&copy;", "&amp", "&notin", "&#", "&#x27;", "&x", "&AMP;", "&lt", "&nbsp;", "\t", "\x01", "\x85", "\ufeff", "<"]


def _random_text(rng: random.Random, most: int, alphabet: list[str]) -> str:
    odd = rng.random() < 0.05
    return "".join(rng.choice(_ODD + alphabet if odd else alphabet) for _ in range(rng.randint(0, most)))


def _random_document(rng: random.Random) -> str:
    def row() -> str:
        href = rng.choice(["https://example.com/", "http://x.cn/a?b=1", ""]) + _random_text(rng, 6, _VALUES)
        added = rng.choice(["1700000000", "", "17x", _random_text(rng, 3, _VALUES)])
        return f'<li><a href="{href}" time_added="{added}" tags="{_random_text(rng, 5, _VALUES)}">{_random_text(rng, 10, _TEXTS)}</a></li>'

    parts = []
    if rng.random() < 0.8:
        parts += ["<!DOCTYPE html>", "<html>", rng.choice(["", "<!--So long and thanks for all the fish-->"]), "<head>",
                  rng.choice(['<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">', '<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />']),
                  "<title>Pocket Export</title>", "</head>", "<body>"]
    for _ in range(rng.randint(0, 3)):
        parts += [f"<h1>{_random_text(rng, 8, _TEXTS)}</h1>", "<ul>", *(row() for _ in range(rng.randint(0, 5))), "</ul>"]
    for _ in range(rng.randint(1, 4) if rng.random() < 0.1 else 0):  # a piece out of its place
        parts.insert(rng.randint(0, len(parts)), rng.choice(["<html>", "</html>", "<body>", "</body>", "<head>", "</ul>", "<title>x</title>", row()]))
    if rng.random() < 0.8:
        parts += ["</body>", "</html>"]
    return "".join(rng.choice(["", "\n", "\t", " ", "\n\t\t", "\n\n"]) + part for part in parts) + rng.choice(["", "\n"])


def test_random_documents_read_from_the_text_give_the_trees_links():
    rng = random.Random(28)
    read = 0
    for _ in range(1500):
        text = _random_document(rng)
        if pocket_rows(text, seeds_html._section_name) is None:
            continue
        read += 1
        assert seeds_html.parse_html(text, "s") == _tree(text), text
    assert read >= 250  # (most random documents hold some piece off the shape: enough are read)


def test_a_part_read_alone_gives_the_wholes_rows_of_that_part():
    """A long export's child reads the first lines, this process the rest (`_pocket_on_two_cores`):
    wherever both parts are in the shape, together they are the whole's rows."""
    rng = random.Random(38)
    both = 0
    for _ in range(600):
        text = _random_document(rng)
        whole = pocket_rows(text, seeds_html._section_name)
        for cut in (at + 1 for at, character in enumerate(text) if character == "\n"):
            first = pocket_rows(text, seeds_html._section_name, end=cut)
            rest = pocket_rows(text, seeds_html._section_name, start=cut)
            if first is not None and rest is not None:
                both += 1
                assert first + rest == whole, (text, cut)
    assert both >= 500


@pytest.mark.parametrize("case", ["child", "child fails", "first part off the shape", "last part off the shape"])
def test_a_long_export_on_two_cores_gives_the_trees_links(monkeypatch, case):
    from mirror.seeds._child_call import ChildCall

    rows = [f'\t\t<li><a href="https://example.com/{i}" time_added="{1_700_000_000 + i}" tags="t{i % 4}">第 {i} 篇</a></li>\n' for i in range(60)]
    if case == "first part off the shape":
        rows[3] = rows[3].replace("<li>", "<li class=x>")
    if case == "last part off the shape":
        rows[-3] = rows[-3].replace("<li>", "<li class=x>")
    rows.insert(30, "\t</ul>\n\t<h1>Read Archive</h1>\n\t<ul>\n")
    text = "<!DOCTYPE html>\n<html>\n<body>\n\t<h1>Unread</h1>\n\t<ul>\n" + "".join(rows) + "\t</ul>\n</body>\n</html>\n"
    answers = []

    class Watched(ChildCall):
        def result(self):
            answers.append(None if case == "child fails" else super().result())
            return answers[-1]

    monkeypatch.setattr(seeds_html, "TWO_CORES", 2)
    monkeypatch.setattr(seeds_html, "ChildCall", Watched)
    links = seeds_html.parse_html(text, "s")
    assert links == _tree(text) and len(links) == 60
    assert {link.section for link in links} == {"Unread", "Read Archive"}
    if case == "child":
        assert answers and answers[0] is not None and 10 < len(answers[0]) < 50  # (its part, read from the text)


@pytest.mark.parametrize("text", [
    "<ul>" * 253 + '<li><a href="https://e.x/a" time_added="" tags="">T</a></li>',  # (libxml2 stops at 256 levels)
    '<ul><li><a href="https://e.x/a" time_added="" tags="">' + "x" * 11_000_000 + "</a></li></ul>",  # (it drops a text of 10 MB)
    "<!--a-->" * 60 + "<p>",  # (each comment was tried as the end of any before it)
], ids=["nested", "huge-title", "comments"])
def test_what_libxml2_reads_otherwise_is_left_to_it(text):
    assert pocket_rows(text, seeds_html._section_name) is None
    assert seeds_html.parse_html(text, "s") == _tree(text)
