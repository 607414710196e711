"""The reader view and the reading home as a reader sees them (issue 24 item 7, and the
reading home's line about unlinked pages from item 3).

A real archive (fetched from a local web server through the project's own API, one page
rendered in chromium for its screenshot), served by `mirror serve` as a process, looked at
in a real headless Chromium: computed styles and laid-out boxes, not template text.
Screenshots go to $MIRROR_TEST_ARTIFACTS, else to the test's temporary folder."""

from __future__ import annotations

import re
from datetime import datetime
from itertools import pairwise
from urllib.parse import quote

import pytest
import sqlite_utils

from mirror._types import Extraction, PageStatus
from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .helpers import CHROMIUM, chromium_or_skip, extraction_pool, solid_png
from .webserver import HostileServer, article

pytestmark = pytest.mark.slow

TITLE = "Reading test: lists, tables and code"


WIDE_COLUMNS = 12


# what the reader must show as a normal site does: lists (nested), a table wider than the
# article, a blockquote, inline code and a long code block, sup/sub, headings, an image
MARKDOWN = """# {title}

A paragraph before the lists, about zebras.

- first bullet
- second bullet
  - nested bullet
  - another nested bullet
- third bullet

A paragraph right after the bullets.

1. step one
2. step two
3. step three

A paragraph right after the numbers.

## A second-level heading

> A quoted line from someone else, set apart from the text.

Energy is E = mc<sup>2</sup>, water is H<sub>2</sub>O, and `inline_code()` reads as code.

```
{long_code}
```

{table}

![a wide picture]({picture})

The last paragraph.
"""


def wide_table() -> str:
    head = "| " + " | ".join(f"column_heading_number_{i}" for i in range(WIDE_COLUMNS)) + " |"
    rule = "|" + "---|" * WIDE_COLUMNS
    row = "| " + " | ".join(f"unbreakable_cell_value_{i}" for i in range(WIDE_COLUMNS)) + " |"
    return "\n".join([head, rule, row, row])


CARDS = [
    "Short card",
    "A card whose title is long enough to wrap over several lines inside its card, and then some more words to be sure",
    "注意力机制",
    "Fourth card",
    "Fifth",
    "Sixth card here",
    "Seventh card",
    "Eighth card, medium length title",
]


ISO_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


READABLE_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """An archive: a rich article, eight short ones, one rendered in chromium (a screenshot),
    a failed link, a duplicate (a link redirecting to an archived article) and two pending
    pages that no reading list links any more."""
    chromium_or_skip()
    folder = tmp_path_factory.mktemp("reader")
    seeds = folder / "seeds"
    seeds.mkdir()
    reading = seeds / "reading.md"
    with HostileServer() as web:
        urls = {"shot": web.add("/shot", article("Rendered with a screenshot", "这一页在浏览器里渲染过。"))}
        urls["reading"] = web.add(
            "/reading",
            f"<html><head><title>{TITLE}</title></head><body><article><h1>{TITLE}</h1>"
            "<p>A paragraph about zebras, long enough to be an article that trafilatura keeps as it is.</p>"
            '<p><img src="/pic.png" alt="a wide picture"></p></article></body></html>'.encode(),
        )
        picture = web.add("/pic.png", solid_png(2000, 40, (40, 120, 200)), content_type="image/png")
        for number, title in enumerate(CARDS, 1):
            urls[f"card{number}"] = web.add(f"/cards/{number}", article(title))
        urls["missing"] = web.url("/missing")
        urls["moved"] = web.add("/moved", b"", status=301, Location=urls["card1"])
        left = [web.url("/left-1"), web.url("/left-2")]

        def write(*names: str, extra: tuple[str, ...] = ()) -> None:
            lines = [f"- [{name}]({urls[name]})" for name in names] + [f"- [left]({url})" for url in extra]
            reading.write_text("# Reading\n" + "\n".join(lines) + "\n", encoding="utf-8")

        everything = ("shot", "reading", *(f"card{n}" for n in range(1, len(CARDS) + 1)), "missing")
        with Archive(folder / "archive") as archive, archive.lock():
            write("shot")  # rendered in chromium, for a screenshot
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(
                archive,
                FetchOptions(delay=0, retries=0, workers=1, timeout=20, browser="always", chromium=CHROMIUM, browser_tabs=1),
                pool=extraction_pool(),
            )
            write(*everything)
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
            markdown = MARKDOWN.format(title=TITLE, long_code="print('" + "a long line of code " * 30 + "')", table=wide_table(), picture=picture)
            archive.save_extraction(  # the article as Markdown; its picture is fetched by the next run
                urls["reading"],
                Extraction(
                    status=PageStatus.ARCHIVED,
                    kind="html",
                    title=TITLE,
                    date="2024-03-05",
                    sitename="Reading Test Site",
                    text=re.sub(r"[#>|`*\-]", " ", markdown),
                    markdown=markdown,
                    word_count=200,
                    images=[picture],
                ),
            )
            write(*everything, "moved")  # ends at card1, archived before: a duplicate
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
            write(*everything, "moved", extra=tuple(left))  # links that then leave the list before any fetch
            archive.record_inventory(read_seeds([seeds], base=folder))
            write(*everything, "moved")
            archive.record_inventory(read_seeds([seeds], base=folder))
    db = sqlite_utils.Database(folder / "archive" / "mirror.db")
    rows = {row["url"]: row for row in db.query("select * from pages")}
    ids = {name: rows[url]["id"] for name, url in urls.items()}
    assert rows[urls["shot"]]["screenshot_warc_file"], "the rendered page has no screenshot"
    assert rows[urls["moved"]]["status"] == PageStatus.DUPLICATE and rows[urls["moved"]]["same_as"] == urls["card1"]
    assert [rows[url]["status"] for url in left] == [PageStatus.PENDING] * 2
    return {"archive": folder / "archive", "urls": urls, "ids": ids, "rows": rows, "left": left, "db": db}


def css(page, selector: str, *properties: str) -> dict[str, str]:
    """Computed values of the first element `selector` finds."""
    return page.locator(selector).first.evaluate(
        "(e, properties) => Object.fromEntries(properties.map(p => [p, getComputedStyle(e).getPropertyValue(p)]))", list(properties)
    )


def px(value: str) -> float:
    return float(value.removesuffix("px"))


def box(page, selector: str) -> dict[str, float]:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, "
        "width: r.width, height: r.height, scrollWidth: e.scrollWidth, clientWidth: e.clientWidth}; }"
    )


def page_is_not_widened(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def visible_text(page) -> str:
    return page.locator("body").inner_text()


def grid_cells(page) -> list[dict]:
    return page.locator(".mirror-grid > li").evaluate_all(
        """cards => cards.map(card => {
            const r = card.getBoundingClientRect(), t = card.querySelector('.mirror-card-thumb').getBoundingClientRect();
            const img = card.querySelector('.mirror-card-thumb img');
            return {left: r.left, top: r.top, width: r.width, height: r.height, thumbWidth: t.width, thumbHeight: t.height,
                    image: img ? img.complete && img.naturalWidth > 0 : null,
                    placeholder: !!card.querySelector('.mirror-card-placeholder')};
        })"""
    )


def assert_grid_without_gaps(page) -> int:
    """Cards in full rows of equal height, equal boxes and equal gaps; returns the columns."""
    cells = grid_cells(page)
    columns = page.locator(".mirror-grid").evaluate("g => getComputedStyle(g).gridTemplateColumns.split(' ').length")
    rows: list[list[dict]] = []
    for cell in sorted(cells, key=lambda c: (round(c["top"]), c["left"])):
        if rows and abs(rows[-1][0]["top"] - cell["top"]) < 1:
            rows[-1].append(cell)
        else:
            rows.append([cell])
    assert all(len(row) == columns for row in rows[:-1]) and 0 < len(rows[-1]) <= columns, [len(r) for r in rows]
    lefts = [cell["left"] for cell in rows[0]]
    for row in rows:
        assert [cell["left"] for cell in row] == pytest.approx(lefts[: len(row)], abs=1)  # the same columns in every row
        assert {round(cell["height"]) for cell in row} == {round(row[0]["height"])}, row  # a row's cards are as tall
    widths = {round(c["width"]) for c in cells}
    thumbs = {(round(c["thumbWidth"]), round(c["thumbHeight"])) for c in cells}
    assert len(widths) == 1 and len(thumbs) == 1, (widths, thumbs)  # a screenshot or none: the same box
    gaps = {round(b["left"] - (a["left"] + a["width"])) for row in rows for a, b in pairwise(row)}
    gaps |= {round(b[0]["top"] - (a[0]["top"] + a[0]["height"])) for a, b in pairwise(rows)}
    assert len(gaps) == 1 and 0 < gaps.pop() <= 24  # the grid's gap, and nothing more
    return columns


def test_reader_shows_lists_tables_code_and_sup_as_a_normal_site_does(built, root, open_page, artifacts):
    page = open_page()
    page.goto(f"{root}/-/mirror/page/{built['ids']['reading']}")
    page.wait_for_load_state("load")
    a = "article.mirror-article"
    # lists: markers, indentation, nesting, and a gap before the next paragraph
    for selector, marker in ((f"{a} > ul > li", "disc"), (f"{a} > ol > li", "decimal"), (f"{a} ul ul > li", "circle")):
        style = css(page, selector, "display", "list-style-type", "list-style-position")
        assert style == {"display": "list-item", "list-style-type": marker, "list-style-position": "outside"}, selector
    assert page.locator(f"{a} > ul > li").count() == 3 and page.locator(f"{a} ul ul > li").count() == 2
    for selector in (f"{a} > ul", f"{a} > ol", f"{a} ul ul"):
        assert px(css(page, selector, "padding-left")["padding-left"]) >= 16, selector
    assert box(page, f"{a} ul ul")["left"] > box(page, f"{a} > ul")["left"] + 16  # nested: further in
    for selector in (f"{a} > ul", f"{a} > ol"):
        gap = page.locator(selector).first.evaluate("e => e.nextElementSibling.getBoundingClientRect().top - e.getBoundingClientRect().bottom")
        assert gap >= 8, (selector, gap)  # the list does not run into the next paragraph
    assert px(css(page, f"{a} > p", "margin-bottom")["margin-bottom"]) >= 8
    # headings
    paragraph = px(css(page, f"{a} > p", "font-size")["font-size"])
    heading = css(page, f"{a} h2", "font-size", "font-weight", "margin-top")
    assert px(heading["font-size"]) > paragraph * 1.2 and int(heading["font-weight"]) >= 700 and px(heading["margin-top"]) > 0
    # a table: borders, padding, a header row; wider than the article, it scrolls inside it
    cell = css(page, f"{a} td", "border-top-width", "border-left-width", "padding-left", "padding-top")
    assert all(px(value) > 0 for value in cell.values()), cell
    header = css(page, f"{a} th", "font-weight", "background-color", "border-bottom-width")
    assert int(header["font-weight"]) >= 600 and header["background-color"] != "rgba(0, 0, 0, 0)" and px(header["border-bottom-width"]) > 0
    assert page.locator(f"{a} th").count() == WIDE_COLUMNS
    table, article_box = box(page, f"{a} table"), box(page, a)
    assert css(page, f"{a} table", "overflow-x")["overflow-x"] == "auto"
    assert table["scrollWidth"] > table["clientWidth"] + 100  # its cells do not fit: it scrolls
    assert table["right"] <= article_box["right"] + 1
    # blockquote, inline code, a code block that scrolls
    quote_style = css(page, f"{a} blockquote", "border-left-width", "padding-left")
    assert px(quote_style["border-left-width"]) >= 2 and px(quote_style["padding-left"]) > 0
    code = css(page, f"{a} p code", "font-family", "background-color")
    assert "mono" in code["font-family"].lower() and code["background-color"] != "rgba(0, 0, 0, 0)"
    pre = css(page, f"{a} pre", "overflow-x", "white-space", "padding-left")
    assert pre["overflow-x"] == "auto" and pre["white-space"] == "pre" and px(pre["padding-left"]) > 0
    pre_box = box(page, f"{a} pre")
    assert pre_box["scrollWidth"] > pre_box["clientWidth"] and pre_box["right"] <= article_box["right"] + 1
    # sup and sub: raised and lowered, smaller
    sup, sub = css(page, f"{a} sup", "vertical-align", "font-size"), css(page, f"{a} sub", "vertical-align", "font-size")
    assert sup["vertical-align"] == "super" and sub["vertical-align"] == "sub"
    assert px(sup["font-size"]) < paragraph and px(sub["font-size"]) < paragraph
    assert box(page, f"{a} sup")["top"] < box(page, f"{a} sub")["top"]
    # the 2000 px picture fits the article
    image = page.locator(f"{a} img")
    assert image.evaluate("img => img.complete && img.naturalWidth") == 2000
    assert box(page, f"{a} img")["width"] <= article_box["width"] + 1
    assert css(page, f"{a} img", "max-width")["max-width"] == "100%"
    assert page_is_not_widened(page)
    # datasette's own elements keep datasette's styles: the navigation menu's list has no markers
    assert css(page, "details.nav-menu ul", "list-style-type")["list-style-type"] == "none"
    page.screenshot(path=str(artifacts / "reader.png"), full_page=True)
    narrow = open_page(480, 800)  # a phone: still nothing wider than the screen
    narrow.goto(f"{root}/-/mirror/page/{built['ids']['reading']}")
    assert page_is_not_widened(narrow)
    narrow.screenshot(path=str(artifacts / "reader-narrow.png"), full_page=True)


def test_dates_read_as_dates(built, root, open_page):
    page = open_page()
    row = built["rows"][built["urls"]["reading"]]
    page.goto(f"{root}/-/mirror/page/{row['id']}")
    captured = page.locator(".mirror-captured time")
    assert READABLE_TIMESTAMP.match(captured.inner_text()), captured.inner_text()
    assert datetime.fromisoformat(captured.get_attribute("datetime")) == datetime.fromisoformat(row["fetched_at"])  # kept for machines
    assert page.locator(".mirror-date").inner_text() == "2024-03-05"
    assert READABLE_TIMESTAMP.match(page.locator("table.rows-and-columns td time").first.inner_text())  # the capture history
    assert not ISO_TIMESTAMP.search(visible_text(page))

    page.goto(root + "/")
    assert READABLE_TIMESTAMP.match(page.locator(".mirror-grid time").first.inner_text())
    assert "2024-03-05" in page.locator("ul.mirror-links li", has_text=TITLE).inner_text()
    assert not ISO_TIMESTAMP.search(visible_text(page))

    page.goto(root + "/-/mirror/search?q=zebras")
    hit = page.locator("li.hit", has_text=TITLE)
    assert hit.locator("time").inner_text() == "2024-03-05" and hit.locator("time").get_attribute("datetime") == "2024-03-05"
    assert not ISO_TIMESTAMP.search(visible_text(page))

    page.goto(root + "/mirror/pages?_search=zebras")  # the table's search: the ranked search page
    assert "ranked by relevance" in visible_text(page)
    assert page.locator("li.hit time").first.inner_text() == "2024-03-05"


def test_failures_page_has_a_human_title(built, root, open_page):
    page = open_page()
    page.goto(root + "/")
    page.click("text=Failures by reason")
    page.wait_for_url("**/mirror/failures")
    assert page.title() == "Failures by reason · mirror"
    assert "http_404" in visible_text(page)  # the query itself is unchanged
    page.goto(root + "/mirror/link_rot")
    assert page.title() == "Link rot · mirror"
    page.goto(root + "/mirror?sql=" + quote("select 1 as one"))  # SQL someone typed: datasette's own title
    assert "select 1 as one" in page.title()


def test_home_grid_has_no_gaps(built, root, open_page, artifacts):
    page = open_page(1280, 900)
    page.goto(root + "/")
    # (the page's CSP allows no eval: no wait_for_function)
    assert page.locator(".mirror-grid img").evaluate_all("imgs => Promise.all(imgs.map(i => i.decode().then(() => i.naturalWidth)))")
    cells = grid_cells(page)
    assert len(cells) == len(CARDS) + 2  # every archived article; the duplicate is not one more
    assert sum(1 for c in cells if c["image"]) == 1 and sum(1 for c in cells if c["placeholder"]) == len(cells) - 1
    wide = assert_grid_without_gaps(page)
    assert css(page, ".mirror-grid .mirror-card-thumb", "text-decoration-line")["text-decoration-line"] == "none"
    page.screenshot(path=str(artifacts / "home.png"), full_page=True)
    narrow = open_page(640, 900)
    narrow.goto(root + "/")
    narrow.wait_for_load_state("load")
    assert assert_grid_without_gaps(narrow) < wide
    assert page_is_not_widened(narrow)
    narrow.screenshot(path=str(artifacts / "home-narrow.png"), full_page=True)


def test_home_says_which_pages_no_reading_list_links(built, root, open_page):
    unlinked = (
        built["db"]
        .execute("select count(*) from pages where status = 'pending' and not exists (select 1 from links where links.url = pages.url)")
        .fetchone()[0]
    )
    assert unlinked == 2
    page = open_page()
    page.goto(root + "/")
    line = page.locator(".mirror-unlinked")
    assert line.inner_text() == "2 pages are no longer linked by any reading list: mirror fetch does not fetch them."
    line.locator("a").click()
    page.wait_for_url("**/mirror/pages?**")
    listed = visible_text(page)
    assert all(url in listed for url in built["left"]) and "/cards/" not in listed and "2 rows" in listed


def test_a_duplicate_shows_its_original(built, root, open_page, artifacts):
    ids, urls = built["ids"], built["urls"]
    page = open_page()
    page.goto(root + "/")
    assert page.locator(".count-duplicate").inner_text() == "duplicate 1"
    row = page.locator("ul.mirror-links li.status-row-duplicate")
    assert row.locator(".status").inner_text() == "duplicate"
    assert row.locator("a.same-as").get_attribute("href") == f"/-/mirror/page/{ids['card1']}"
    page.goto(f"{root}/-/mirror/page/{ids['moved']}")
    note = page.locator(".mirror-same-as")
    assert note.inner_text() == f"Same article as {CARDS[0]}, archived under another link."
    assert page.locator(".mirror-status").inner_text() == "duplicate"
    page.screenshot(path=str(artifacts / "duplicate.png"), full_page=True)
    note.locator("a").click()
    page.wait_for_url(f"**/-/mirror/page/{ids['card1']}")
    assert page.locator("h1").inner_text() == CARDS[0] and page.locator(".mirror-same-as").count() == 0
    assert built["rows"][urls["card1"]]["status"] == PageStatus.ARCHIVED
