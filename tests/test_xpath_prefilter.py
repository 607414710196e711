"""trafilatura's `re:test()` expressions, decided per page: the same nodes, the same articles."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import re

import pytest
from lxml import html

import mirror.extract.article
from mirror.extract import xpath_prefilter as _xpath_prefilter
from mirror.extract.xpath_prefilter import PageGuardedXPath, page_attributes

from .conftest import CORPUS


def _guarded_expressions() -> list[PageGuardedXPath]:
    import sys

    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("trafilatura."):
            for value in vars(module).values():
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, PageGuardedXPath):
                        found[id(item)] = item
    return list(found.values())


def _corpus_pages(n: int) -> list:
    if not CORPUS.is_dir():
        pytest.skip(f"real-page corpus not found at {CORPUS}")
    pages = sorted(CORPUS.glob("gne-zh/tests/*/*.html"))[:n] + sorted(CORPUS.glob("readability/test-pages/*/source.html"))[:n]
    return [p.read_bytes() for p in pages]


# classes and ids that trafilatura's patterns match (anchored, case-insensitive, in unions),
# next to ones that only look close; values with line breaks inside
HOSTILE = """<html><body>
<div class="comments-area x"><p>reply</p></div><div class="x\ncomments"><p>no</p></div>
<div id="comments"><p>a</p></div><span class="author-name">Ann Author</span>
<div class="meta entry"><a href="/tag/x">x</a></div><div class="zmeta"><a href="/tag/y">y</a></div>
<div class="COOKIE-BANNER">cookies</div><div id="mvp-post-add-box">ad</div>
<section class="post-content"><p>Body text.</p></section><div style="x">s</div>
<div class="&#10;hide-me">h</div><p class="byline">By Bob Builder</p>
</body></html>"""


def test_every_expression_selects_the_same_nodes():
    expressions = _guarded_expressions()
    assert len(expressions) >= 15  # trafilatura's expressions were found and wrapped
    trees = [html.fromstring(body) for body in _corpus_pages(25)] + [html.fromstring(HOSTILE)]
    for tree in trees:
        with page_attributes(tree):
            for expression in expressions:
                assert expression(tree) == expression.original(tree), expression.path
    kept = [keep for expression in expressions for key in expression.variants for keep in key]
    assert False in kept and True in kept  # pages where a re:test was skipped, and where it was kept


def test_outside_a_page_the_original_runs():
    expression = _guarded_expressions()[0]
    tree = html.fromstring(HOSTILE)
    assert expression(tree) == expression.original(tree)


@pytest.mark.parametrize(
    ("pattern", "values", "expected"),
    [
        ("^meta", ["x meta", "zmeta"], False),
        ("^meta", ["x", "meta-x"], True),
        ("hide$", ["hide me"], False),
        ("hide$", ["x hide"], True),
        ("(?<!x)meta", ["xmeta"], False),  # a look-behind: tested value by value
        ("(?<!x)meta", ["xmeta", "meta"], True),
        ("a|", [], True),  # matches the empty string: true even with no value at all
    ],
)
def test_a_pattern_matches_a_page_exactly_when_it_matches_one_of_its_values(pattern, values, expected):
    page = _xpath_prefilter._PageValues(None)
    page.values["class"] = values
    assert page.can_match(("class",), pattern, "") is expected


def test_articles_are_the_same_with_and_without(monkeypatch):
    for body in _corpus_pages(15):
        guarded = mirror.extract.article.extract(body, "http://127.0.0.1/page.html", "text/html")
        with monkeypatch.context() as patch:
            patch.setattr(mirror.extract.article, "page_attributes", lambda tree: contextlib.nullcontext())
            original = mirror.extract.article.extract(body, "http://127.0.0.1/page.html", "text/html")
        assert dataclasses.asdict(guarded) == dataclasses.asdict(original)


def test_joined_values_never_miss_a_match():
    """Searching the joined values may find more than value by value (then the re:test is
    simply kept), never less: checked for every pattern trafilatura uses, on random values
    made of the patterns' own pieces, spaces and line breaks."""
    rng = random.Random(11)
    sites = {(site[1], site[2]) for expression in _guarded_expressions() for site in expression.sites}
    pieces = ["author", "comment", "s", "-", "_", " ", "\n", "meta", "hide", "x", "Tag", "link", "bottom", "cookie", "post"]
    for pattern, flags in sorted(sites):
        regex, _ = _xpath_prefilter._compiled(pattern, "i" in flags)
        plain = re.compile(pattern, re.I if "i" in flags else 0)
        for _ in range(200):
            values = ["".join(rng.choices(pieces, k=rng.randint(0, 4))) for _ in range(rng.randint(0, 3))]
            page = _xpath_prefilter._PageValues(None)
            page.values["class"] = values
            truth = any(plain.search(value) for value in ["", *values])
            if truth:
                assert page.can_match(("class",), pattern, flags), (pattern, values)
