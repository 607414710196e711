"""Layout tables are not data tables: a page laid out in `<table>`s (2005-era news sites and
forums) reads as its paragraphs, not as rows of pipes.

trafilatura renders every `<table>` it keeps as a Markdown table, in `text` as in `markdown`: a
page whose navigation, columns and article sit in nested tables came out as "| 企业服务首页 | |
| 产业资讯 |", rows of "| | | |", and the article run together into one cell's line. Browsers'
reader modes tell the two kinds apart before reading (Mozilla Readability's `_markDataTables`);
so does `unwrap_layout_tables`, on the parsed page before trafilatura sees it: a layout table's
rows and cells become blocks, and the loose text of a cell paragraphs (a `<br><br>` or a line
indented with ideographic spaces starts a new one, as such pages write paragraphs). A data table
stays a table; `markdown.header_rows` gives it the header row a Markdown table needs.
"""

from __future__ import annotations

import re

__all__ = ["is_layout_table", "unwrap_layout_tables"]

# what a data cell never holds: a cell with one of these is a column of a page, not a datum
_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "iframe",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "ul",
    }
)
_SECTIONS = ("thead", "tbody", "tfoot")
_CELLS = ("td", "th")
_PROSE = 300  # characters of text in one cell: a paragraph of an article, not a datum
_INDENT = re.compile(r"^[ \t\r\n]*\u3000")  # a Chinese paragraph's ideographic-space indent
_SPACES = re.compile(r"[ \t\r\n]+")  # (not U+3000: an indent is the text's own)


def unwrap_layout_tables(tree) -> int:
    """Turn every layout table of `tree` (`is_layout_table`) into blocks, in place: the table and
    its rows become `<div>`s (its row groups give way to their rows), each cell a `<div>` of
    paragraphs. Returns how many."""
    layout = [table for table in tree.iter("table") if is_layout_table(table)]  # all judged before any changes
    for table in layout:
        _unwrap(table)
    return len(layout)


def is_layout_table(table) -> bool:
    """Whether `table` lays out a page rather than holds data, on the evidence Readability weighs
    and more: a role that says so; a table inside it; then, unless it has a data table's marks
    (a caption, a summary, header cells, column groups), one row or one column, a cell holding
    blocks (paragraphs, lists, divisions), a cell holding a paragraph's worth of prose, or cells
    mostly empty (spacers)."""
    role = (table.get("role") or "").strip().lower()
    if role in ("presentation", "none") or (table.get("datatable") or "").strip() == "0":
        return True
    if role in ("table", "grid", "treegrid"):
        return False
    if next(table.iterdescendants("table"), None) is not None:
        return True
    rows = _rows(table)
    cells = [cell for row in rows for cell in row if cell.tag in _CELLS]
    if not cells:
        return True
    if _has_data_marks(table, cells):
        return False
    columns = max(sum(_span(cell) for cell in row if cell.tag in _CELLS) for row in rows)
    if len(rows) == 1 or columns == 1:
        return True
    texts = [" ".join(cell.text_content().split()) for cell in cells]
    if any(_holds_blocks(cell) for cell in cells) or max(map(len, texts)) > _PROSE:
        return True
    empty = sum(1 for cell, text in zip(cells, texts, strict=True) if not text and cell.find(".//img") is None)
    return empty * 2 > len(cells)


def _rows(table) -> list:
    """The table's own rows: its `<tr>` children and those of its row groups (not a nested table's)."""
    rows = []
    for child in table:
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _SECTIONS:
            rows.extend(row for row in child if row.tag == "tr")
    return rows


def _has_data_marks(table, cells: list) -> bool:
    if (table.get("summary") or "").strip():
        return True
    if any(cell.tag == "th" for cell in cells):
        return True
    for child in table:
        if child.tag == "caption" and child.text_content().strip():
            return True
        if child.tag in ("thead", "tfoot", "col", "colgroup"):
            return True
    return False


def _span(cell) -> int:
    try:
        return max(1, min(int((cell.get("colspan") or "1").strip()), 100))
    except ValueError:
        return 1


def _holds_blocks(cell) -> bool:
    return any(isinstance(child.tag, str) and child.tag in _BLOCKS for child in cell.iterdescendants())


def _unwrap(table) -> None:
    rows = _rows(table)
    for child in list(table):
        if child.tag in _SECTIONS:  # its rows straight in the table: a figure by another name (`figures`) is still near its image
            child.drop_tag()
        elif child.tag == "caption":
            child.tag = "p"
    for row in rows:
        for cell in row:
            if cell.tag in _CELLS:
                _cell_as_blocks(cell)
        row.tag = "div"
        _drop_layout_attributes(row)
    table.tag = "div"
    _drop_layout_attributes(table)


def _drop_layout_attributes(element) -> None:
    """A cell's or row's width, colspan and the like mean nothing on a `<div>`; class and id stay
    (trafilatura reads them)."""
    for name in [name for name in element.attrib if name not in ("class", "id", "style", "lang", "dir")]:
        del element.attrib[name]


def _cell_as_blocks(cell) -> None:
    """The cell as a `<div>`: its blocks as they are, its loose text and inline elements as
    paragraphs, one for each run between blocks, split where two `<br>`s in a row or an indented
    line (`<br>　　`) start a new paragraph; the line breaks between are dropped."""
    from lxml.html import Element

    cell.tag = "div"
    _drop_layout_attributes(cell)
    children = list(cell)
    nodes: list = [cell.text] if cell.text else []
    cell.text = None
    for child in children:
        tail, child.tail = child.tail, None
        cell.remove(child)
        nodes.append(child)
        if tail:
            nodes.append(tail)
    paragraph = None
    breaks = 0  # `<br>`s since the last text of the open paragraph
    for node in nodes:
        if isinstance(node, str):
            if not node.strip():
                if paragraph is not None:
                    _append_text(paragraph, node)
                continue
            if paragraph is not None and (breaks >= 2 or (breaks and _INDENT.match(node))):
                _close(paragraph)
                paragraph = None
            if paragraph is None:
                paragraph = Element("p")
                cell.append(paragraph)
            _append_text(paragraph, node)
            breaks = 0
        elif isinstance(node.tag, str) and node.tag in _BLOCKS:
            if paragraph is not None:
                _close(paragraph)
            paragraph, breaks = None, 0
            cell.append(node)
        elif node.tag == "br":
            if paragraph is not None:
                breaks += 1
                paragraph.append(node)
        elif not isinstance(node.tag, str):  # a comment: in the paragraph it stands in, or nowhere
            if paragraph is not None:
                paragraph.append(node)
        else:  # an inline element: a link, an image, emphasis
            if paragraph is not None and breaks >= 2:
                _close(paragraph)
                paragraph = None
            if paragraph is None:
                paragraph = Element("p")
                cell.append(paragraph)
            paragraph.append(node)
            breaks = 0
    if paragraph is not None:
        _close(paragraph)


def _append_text(element, text: str) -> None:
    """`text` at the end of `element`, its runs of white space one space, as a browser shows them
    (source line breaks inside a sentence are no line breaks of the article)."""
    text = _SPACES.sub(" ", text)
    if len(element):
        element[-1].tail = (element[-1].tail or "") + text
    else:
        element.text = (element.text or "") + text


def _close(paragraph) -> None:
    """The `<br>`s that ended a paragraph (where the next one starts) are no part of it; a
    paragraph that shows nothing (an anchor, a spacer's `<font>`) is none."""
    while len(paragraph) and paragraph[-1].tag == "br" and not (paragraph[-1].tail or "").strip():
        paragraph.remove(paragraph[-1])
    if not paragraph.text_content().strip() and next(paragraph.iter("img", "picture", "svg", "video", "iframe"), None) is None:
        paragraph.getparent().remove(paragraph)
