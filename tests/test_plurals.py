"""Counts as a person writes them (issue 42 item 15): `1 link`, `2 links`, through one helper
(`mirror._util.text.count`, the `mirror_count` filter in templates); no message writes a number
before a plural noun by itself."""

from __future__ import annotations

import re
from pathlib import Path

import mirror
from mirror._util.text import count

from .webserver import article

SOURCE = Path(mirror.__file__).parent
NOUNS = "pages|links|seeds|articles|images|entries|chapters|files|records|hosts|resources|feeds|captures|words|lines|bytes|runs|lists|versions"
# a number in braces right before a plural noun, in code or a template
BARE = re.compile(r"\{\{?[^{}'\"]*\}\}? (?:" + NOUNS + r")\b")  # (no quotes: not a word chosen by a count)
# where the number is a constant of several, or known to be more than one
KNOWN_PLURAL = ("{MAX_IMAGES} images", "{tries} runs", "{MAX_SAVED_BYTES:,} bytes", "{MAX_UPLOAD:,} bytes", "{_MAX_FIELD:,} bytes")


def test_count_writes_one_and_many():
    assert (count(0, "page"), count(1, "page"), count(2, "page")) == ("0 pages", "1 page", "2 pages")
    assert (count(1, "entry", "entries"), count(3, "entry", "entries")) == ("1 entry", "3 entries")
    assert count(12000, "page", thousands=True) == "12,000 pages"


def test_no_message_puts_a_number_before_a_plural_by_itself():
    found = []
    for path in sorted([*SOURCE.rglob("*.py"), *SOURCE.rglob("*.html")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\b(select|where|from pages|insert|update)\b", line, re.IGNORECASE):
                continue  # SQL, not a message
            for hit in BARE.findall(line):
                if hit not in KNOWN_PLURAL:
                    found.append(f"{path.relative_to(SOURCE)}:{number}: {hit}")
    assert found == []


def test_one_of_each_reads_as_one(cli, tmp_path, web):
    url = web.add("/one", article("一篇", "只有一篇文章。"))
    (tmp_path / "list.md").write_text(f"- {url}\n- ./notes.md\n", encoding="utf-8")
    links = cli("links", "list.md")
    assert "2 links in 1 seed -> 2 pages" in links.stderr, links.stderr
    fetched = cli("fetch", "list.md", "--delay", "0", "--workers", "1")
    assert "fetching 1 page\n" in fetched.stderr and "1 of 1 page in" in fetched.stderr
    assert "1 link is not a web page and is skipped" in fetched.stderr
    exported = cli("export", "markdown", "vault")
    assert "1 article exported" in exported.stderr and "0 images" in exported.stderr
