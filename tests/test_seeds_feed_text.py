"""A feed's entries read from its text (`seeds/_feed_text.py`, issue 28's speed) once libxml2 has
found it well-formed: the same links and warnings as the tree gives, on real-shaped feeds and
on random ones; an entry of another shape, or a start tag in a comment, leaves the feed to the tree."""

from __future__ import annotations

import random

import pytest

from mirror.seeds import _feed_text
from mirror.seeds import imports as seeds_imports

# a bookmark service's RSS export: a channel head, CDATA descriptions, several categories
RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom">
  <channel>
    <title>My  bookmarks</title>
    <link>https://service.example/u/me</link>
    <description><![CDATA[Everything I <b>saved</b>]]></description>
    <atom:link href="https://service.example/u/me/rss" rel="self" type="application/rss+xml"/>
    <lastBuildDate>Tue, 05 Mar 2024 08:00:00 GMT</lastBuildDate>
    <item>
      <title>FlashAttention 详解 &amp; 注释</title>
      <link>https://zhuanlan.zhihu.com/p/1?a=1&amp;b=2</link>
      <guid isPermaLink="false">1</guid>
      <pubDate>Tue, 05 Mar 2024 08:00:00 GMT</pubDate>
      <description><![CDATA[<p>An article <a href="x">with markup</a></p>]]></description>
      <category>mlsys</category>
      <category>注意力</category>
      <dc:creator>someone</dc:creator>
    </item>
    <item>
      <title>Without a date &#8212; &#x1F600;</title>
      <link>  https://example.com/b  </link>
      <guid isPermaLink="false">2</guid>
      <description>plain &lt;escaped&gt; text</description>
    </item>
    <item>
      <title>No link</title>
      <guid isPermaLink="false">3</guid>
    </item>
    <item><title/><link>https://example.com/c</link><pubDate>Wed, 06 Mar 2024 09:10:11 GMT</pubDate><category/></item>
  </channel>
</rss>
"""
ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom blog</title>
<entry><title type="html">Post A</title><link rel="edit" href="https://blog.example/edit/a"/><link rel="alternate" href="https://blog.example/a"/>
<id>tag:a</id><updated>2024-01-01T00:00:00Z</updated><published>2023-12-01T00:00:00Z</published><category term="gpu"/><category term="" label="x">text</category></entry>
<entry><title>Post B</title><link href="https://blog.example/b"/><updated>2024-01-02T00:00:00Z</updated></entry>
</feed>
"""


def _links(text: str | bytes, base: str | None = None, tree: bool = False, monkeypatch=None):
    warnings: list[str] = []
    if tree:
        monkeypatch.setattr(seeds_imports, "feed_rows", lambda *args: None)
    links = seeds_imports.parse_feed(text, "s", warnings.append, base)
    if tree:
        monkeypatch.undo()
    return links, warnings


@pytest.mark.parametrize("text", [RSS, ATOM], ids=["rss", "atom"])
def test_a_feed_read_from_its_text_gives_the_trees_links_and_warnings(monkeypatch, text):
    assert _feed_text.feed_rows(text, "s", None) is not None  # (read from the text)
    for base in (None, "https://feed.example/x/"):
        assert _links(text, base) == _links(text, base, tree=True, monkeypatch=monkeypatch)
    links, warnings = _links(text)
    if text is RSS:
        assert [(link.url_as_written, link.line, link.col, link.title, link.section, link.tags, link.added) for link in links] == [
            ("https://zhuanlan.zhihu.com/p/1?a=1&b=2", 9, 1, "FlashAttention 详解 & 注释", "My bookmarks", "mlsys, 注意力", "2024-03-05T08:00:00+00:00"),
            ("https://example.com/b", 19, 2, "Without a date — 😀", "My bookmarks", None, None),
            ("https://example.com/c", 29, 4, None, "My bookmarks", None, "2024-03-06T09:10:11+00:00"),
        ]
        assert warnings == ["s: line 25: an entry without a link; skipped"]
    else:
        assert [(link.url, link.tags, link.added) for link in links] == [
            ("https://blog.example/a", "gpu, text", "2023-12-01T00:00:00+00:00"), ("https://blog.example/b", None, "2024-01-02T00:00:00+00:00")]


@pytest.mark.parametrize("change", [
    ("<dc:creator>someone</dc:creator>", "<dc:creator><name>someone</name></dc:creator>"),  # a child that holds elements
    ("</item>\n    <item>", "</item><!-- <item><link>https://commented.example/</link></item> -->\n    <item>"),
    ("Everything I", "<item><link>https://in-cdata.example/</link></item>"),
    ("<title>No link</title>", "<title><![CDATA[No link]]></title>"),  # CDATA in a text that is read
    ("<category>mlsys</category>", "<category>mlsys</category><!-- a note -->"),
    ('<item>\n      <title>No link', '<item\n  id="3">\n      <title>No link'),  # a start tag over two lines
])
def test_a_feed_not_in_a_shape_read_from_the_text_is_read_from_the_tree(monkeypatch, change):
    text = RSS.replace(*change)
    assert text != RSS
    assert _feed_text.feed_rows(text, "s", None) is None
    assert _links(text) == _links(text, tree=True, monkeypatch=monkeypatch)


@pytest.mark.parametrize("change", [
    ("&amp; 注释", "&nbsp; 注释"),  # an undeclared entity: libxml2 mends it, the tree is read
    ("</title>", "</titel>"),
    ("<?xml", '<!DOCTYPE rss [<!ENTITY e "x">]>\n<?xml'),
])
def test_a_feed_libxml2_mends_is_read_from_the_tree(monkeypatch, change):
    text = RSS.replace(*change, 1)
    calls = []
    monkeypatch.setattr(seeds_imports, "_entries", lambda *args: calls.append(1) or iter(()))
    seeds_imports.parse_feed(text, "s", lambda warning: None)
    assert calls == [1] or change[0] == "<?xml"  # (a DTD before the declaration: not a feed at all)
    monkeypatch.undo()
    assert _links(text) == _links(text, tree=True, monkeypatch=monkeypatch)


_CHARACTERS = list("abcXYZ019 ;=#/?.:_-'\"><\t\n") + [
    "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#39;", "&#x41;", "&#20013;", "&#x1F600;", "注意", "😀", "\xa0", "\u3000", "]]", "\u2028", "\x85"]
_PLAIN = [c for c in _CHARACTERS if c not in ("<", "&", ">")]
_NAMES = ["title", "link", "pubDate", "published", "updated", "date", "category", "subject", "description", "guid",
          "content:encoded", "dc:date", "dc:subject", "dc:creator", "media:title", "atom:link", "x:title", "id", "entry"]
_NAMESPACES = (' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/"'
               ' xmlns:media="http://search.yahoo.com/mrss/" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:x="urn:x"')


def _random_feed(rng: random.Random) -> str:
    """A feed whose entries are mostly of a few plain shapes, as an export's are, with odd ones."""
    odd = rng.random() < 0.3

    def text(most: int, cdata: bool = False) -> str:
        value = "".join(rng.choice(_CHARACTERS if rng.random() < 0.01 else _PLAIN) for _ in range(rng.randint(0, most)))
        return f"<![CDATA[{value.replace(']]', '')}]]>" if cdata else value

    def attributes() -> str:
        chosen = rng.sample(["href", "rel", "term", "type", "xml:lang", "atom:href"], rng.randint(0, 2))
        values = ["alternate", "self", "https://e.example/a", "", "&amp;&#10;x", "https://e.example/a\tb\nc d"]
        return "".join(f' {key}="{rng.choice(values)}"' for key in chosen)

    def child(name: str) -> str:
        roll = rng.random()
        if odd and roll < 0.1:
            return rng.choice([f"<{name}><inner>{text(3)}</inner></{name}>", f"<!--{text(4).replace('-', '')}-->", f"<{name}>{text(5, cdata=True)}</{name}>"])
        if roll < 0.15:
            return f"<{name}{attributes()}/>"
        body = text(10, cdata=name in ("description", "content:encoded") and roll < 0.5)
        if name == "link" and roll < 0.8:
            body = rng.choice(["https://e.example/p", " http://x.cn/a?b=1&amp;c=2 ", "/rel/path", ""]) + text(3)
        if name == "pubDate" and roll < 0.8:
            body = rng.choice(["Tue, 05 Mar 2024 08:00:00 GMT", "2024-03-05T08:00:00Z", "junk"])
        return f"<{name}{attributes() if roll < 0.3 else ''}>{body}</{name}{rng.choice(['', ' ', chr(10)])}>"

    kind = rng.choice(["rss", "atom", "rdf"])
    entry_name = rng.choice({"rss": ["item"], "atom": ["entry", "atom:entry"], "rdf": ["item", "dc:item"]}[kind])
    shapes = [rng.sample(_NAMES, rng.randint(1, 6)) for _ in range(rng.randint(1, 3))]
    entries = "".join(
        rng.choice(["\n", "", " "]) + f"<{entry_name}>" + "".join(rng.choice(["", "\n", "  "]) + child(name) for name in rng.choice(shapes))
        + rng.choice(["", "\n"]) + f"</{entry_name}>" for _ in range(rng.randint(0, 8)))
    if odd and rng.random() < 0.2:
        entries += rng.choice(["<!-- <item><link>https://fake.example/</link></item> -->", "<x:y><![CDATA[<item>]]></x:y>", "<item/>"])
    head = rng.choice(['<?xml version="1.0" encoding="UTF-8"?>\n', ""])
    if kind == "rss":
        return f'{head}<rss version="2.0"{_NAMESPACES}><channel><title>{text(5)}</title>{entries}</channel></rss>\n'
    if kind == "atom":
        return f'{head}<feed xmlns="http://www.w3.org/2005/Atom"{_NAMESPACES}><title>T</title>{entries}</feed>'
    return (f'{head}<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"{_NAMESPACES}>'
            f"<channel><title>R</title></channel>{entries}</rdf:RDF>")


def test_random_feeds_read_from_the_text_give_the_trees_links_and_warnings(monkeypatch):
    rng = random.Random(28)
    read = 0
    for _ in range(1200):
        text = _random_feed(rng)
        base = rng.choice([None, "https://feed.example/x/"])
        if (rows := _feed_text.feed_rows(text, "s", None)) is not None:
            read += len(rows[0])
        assert _links(text, base) == _links(text, base, tree=True, monkeypatch=monkeypatch), text
    assert read >= 600  # (links read from the text, not the tree)


class _InProcess:
    """A ChildCall whose function runs here, at `result()` (the real child: tests/test_seeds_split.py)."""

    def __init__(self, module: str, function: str, *args: object) -> None:
        import importlib

        self.call = (getattr(importlib.import_module(module), function), args)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def send(self, *args: object) -> None:
        pass  # (a waiting child is given rows: none here, links_of makes them all)

    def result(self):
        function, args = self.call
        return function(*args)


def test_a_feed_cut_anywhere_between_two_processes_gives_the_trees_links(monkeypatch):
    """A long feed's child reads the first part from the text, this process the rest (`_feed_split`):
    wherever the cut falls (after any `>`: an entry's end, or not), the links and warnings are the tree's."""
    rng = random.Random(38)
    monkeypatch.setattr(seeds_imports, "ChildCall", _InProcess)
    monkeypatch.setattr(seeds_imports, "TWO_CORES", 1)
    cuts = 0
    for _ in range(100):
        text = _random_feed(rng)
        base = rng.choice([None, "https://feed.example/x/"])
        tree = _links(text, base, tree=True, monkeypatch=monkeypatch)
        monkeypatch.setattr(seeds_imports, "ChildCall", _InProcess)
        monkeypatch.setattr(seeds_imports, "TWO_CORES", 1)
        for cut in (at + 1 for at, character in enumerate(text) if character == ">"):
            monkeypatch.setattr(seeds_imports, "_feed_split", lambda text, cut=cut: cut)
            cuts += seeds_imports._feed_fields_for_parent(text[:cut], "s", base) is not None
            assert _links(text, base) == tree, (text, cut)
    assert cuts >= 200  # (cuts where the child's part was read from the text)


@pytest.mark.parametrize("case", ["child", "child fails", "cut in CDATA", "cut in a comment"])
def test_a_long_feed_on_two_cores_gives_the_trees_links(monkeypatch, case):
    from mirror.seeds._child_call import ChildCall

    item = "<item><title>第 {i} 期 &amp; co</title><link>https://example.com/{i}</link><description><![CDATA[a </item> b]]></description><category>c{c}</category></item>\n"
    items = [item.format(i=i, c=i % 3) for i in range(60)]
    if case == "cut in a comment":  # (read whole, the feed goes to the tree: the comment shows an entry)
        items[31] += "<!-- a note> <item><link>https://commented.example/</link></item> -->\n"
    text = '<?xml version="1.0"?>\n<rss version="2.0"><channel><title>周报</title>\n' + "".join(items) + "</channel></rss>\n"
    answers = []

    class Watched(ChildCall):
        def result(self):
            answers.append(None if case == "child fails" else super().result())
            return answers[-1]

    monkeypatch.setattr(seeds_imports, "TWO_CORES", 2)
    monkeypatch.setattr(seeds_imports, "ChildCall", Watched)
    if case.startswith("cut in"):  # (the child's part does not end with an entry: the whole is read here)
        at = "a </item>" if case == "cut in CDATA" else "a note>"
        monkeypatch.setattr(seeds_imports, "_feed_split", lambda text: text.index(at, len(text) // 2) + len(at))
    links = _links(text)
    monkeypatch.undo()
    assert links == _links(text, tree=True, monkeypatch=monkeypatch) and len(links[0]) == 60
    if case == "child":
        assert answers and answers[0] is not None and 10 < len(answers[0][0]) < 50  # (its part, read from the text)
    if case.startswith("cut in"):
        assert answers[0] is None  # (then the tree, on two cores as ever)


@pytest.mark.parametrize("text", [
    "<rss><channel><item><link>&#x110000;</link></item></channel></rss>",  # (not a character)
    "<rss><channel><item><link>x</link><title>&#99999999999999999999;</title></item></channel></rss>",
    "<rss><channel><item><link>x</link><category>&#" + "1" * 5000 + ";</category></item></channel></rss>",  # (past int()'s digits)
    "<rss><channel><item><link>x</link>" + "<c/>" * 4000 + "</item></channel></rss>",  # (a shape of 4,000 children)
    "<rss><channel>" + "".join(f"<item><link>x</link><c{i}/></item>" for i in range(300)) + "</channel></rss>",  # (300 shapes)
], ids=["past-unicode", "huge-number", "many-digits", "many-children", "many-shapes"])
def test_a_hostile_feed_is_read_as_the_tree_reads_it(monkeypatch, text):
    if "<c/>" in text or "<c1/>" in text:  # (a shape's expression is made at a cost a child: past 256 of them, the tree reads it)
        assert _feed_text.feed_rows(text, "s", None) is None
    links = _links(text)
    assert links == _links(text, tree=True, monkeypatch=monkeypatch)


def test_a_feed_past_65535_lines_keeps_each_entrys_own_line(monkeypatch):
    """Past line 65,535 libxml2 guesses an element's line from the text in it; read from the text, an entry has its own."""
    text = "<rss>" + "\n" * 70_000 + "<item><title>\nT</title><link>https://example.com/x</link></item>\n<item><title>\nU</title></item></rss>"
    lines = [text.count("\n", 0, at) + 1 for at in (text.index("<item>"), text.rindex("<item>"))]  # (70,001 and 70,003)
    links, warnings = _links(text)
    assert [link.line for link in links] == lines[:1] and warnings == [f"s: line {lines[1]}: an entry without a link; skipped"]
    tree_links, tree_warnings = _links(text, tree=True, monkeypatch=monkeypatch)
    assert [link.line for link in tree_links] == [lines[0] + 1]  # (the line of the title's text)
    assert tree_warnings == [f"s: line {lines[1] + 1}: an entry without a link; skipped"]


def test_comments_before_a_feeds_root_are_read_once():
    """(Each comment was tried as the end of any before it: 30 of them took minutes.)"""
    assert seeds_imports.feed_kind("<!--a-->" * 60 + "<x/>") is None
    assert seeds_imports.feed_kind("<!-- a -->\n" * 60 + "<rss>") == "rss"
    assert seeds_imports.feed_kind("<!--" * 100_000) is None
