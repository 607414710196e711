"""A page's versions in the reader: the list (when, how, what each was), and any two compared
with the changed passages marked: by word for English, by character for Chinese."""

from __future__ import annotations

import asyncio
import html
import re
from difflib import SequenceMatcher

import sqlite_utils
from datasette import Response

from .._util.similar import changed_fraction, text_hash
from ..store import health
from ._common import _archive, _BadRequest, _folder, _Missing, _page_id, _read, _views, reader_csp

__all__ = ["compare_view", "diff_html", "versions_for_reader"]

# a token: one CJK character, a run of letters or digits, a run of spaces, or one other character
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+|\s+|.", re.S)
_CONTEXT = 160  # characters of unchanged text kept on each side of a change
MAX_DIFF_CHARS = 200_000  # of each version: a diff of longer texts compares their beginnings
_WORDS = {"first": "first capture", "same": "unchanged", "changed": "changed", "moved": "moved", "gone": "gone",
          "soft_404": "soft 404", "blocked": "blocked", "failed": "could not check"}


async def versions_for_reader(datasette, db, page: dict) -> list[dict]:
    """The page's versions, newest first, with what the reader shows of each."""
    rows = await _read(db, health.versions_of, page["url"])
    path = datasette.urls.path
    return [{
        **row,
        "what": _WORDS.get(row["state"], row["state"]),
        "snapshot": path(f"/-/mirror/page/{page['id']}/version/{row['id']}") if row["warc_file"] and row["state"] not in ("failed",) else None,
        "comparable": row["text_hash"] is not None,
    } for row in rows]


@_views
async def compare_view(datasette, request):
    """Two versions of a page's article, the changes between them marked."""
    db = await _archive(datasette, request)
    page_id = _page_id(request)
    page = (await db.execute("select * from pages where id = ?", [page_id])).first()
    if page is None:
        raise _Missing(f"no page {page_id} in this archive")
    page = dict(page)
    versions = [await _version(db, page_id, request.args.get(key)) for key in ("a", "b")]
    texts = [await _text(db, page, v) for v in versions]
    marked = await asyncio.to_thread(diff_html, texts[0], texts[1])
    context = {
        "page": page, "a": versions[0], "b": versions[1], "diff": marked,
        "changed": changed_fraction(texts[0], texts[1]),
        "reader": datasette.urls.path(f"/-/mirror/page/{page_id}"),
        "what": _WORDS,
    }
    body = await datasette.render_template("mirror_compare.html", context, request=request)
    return Response.html(body, headers={"Content-Security-Policy": reader_csp()})


async def _version(db, page_id: int, value: str | None) -> dict:
    if not value or not re.fullmatch(r"\d{1,18}", value):
        raise _BadRequest("compare two versions: ?a=<version>&b=<version> (the reader lists them)")
    version = await _read(db, health.version_of, page_id, int(value))
    if version is None:
        raise _Missing(f"no version {value} of this page")
    if version["text_hash"] is None:
        raise _BadRequest(f"version {value} has no article to compare (it was {_WORDS.get(version['state'], version['state'])})")
    return version


async def _text(db, page: dict, version: dict) -> str:
    """A version's article text: the saved copy's when it is that one, else extracted again from its capture."""
    if version["text_hash"] == text_hash(page.get("text")):
        return page.get("text") or ""
    capture = await db.execute_fn(lambda conn: health.version_capture(sqlite_utils.Database(conn), version))
    if capture is None:
        raise _Missing("the capture of this version is not in the archive")
    from ..extract.article import extract_capture
    from ..store.queries import warc_location

    try:
        article = await asyncio.to_thread(extract_capture, _folder(db), warc_location(capture), capture["final_url"] or page["url"])
    except Exception as exc:  # noqa: BLE001 - a damaged capture is a missing one
        raise _Missing(f"the capture of this version cannot be read: {exc}") from None
    return article.text or ""


def diff_html(before: str, after: str) -> str:
    """`after` against `before` as HTML: removed text in <del>, added text in <ins>, long
    unchanged stretches shortened. Paragraphs are matched first, then the words (characters, in
    Chinese) of the paragraphs that changed, so long articles diff in linear time."""
    a, b = before[:MAX_DIFF_CHARS].split("\n"), after[:MAX_DIFF_CHARS].split("\n")
    out: list[str] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(_unchanged("\n".join(a[i1:i2]), first=not out, last=i2 == len(a)))
        else:
            out.append(_words("\n".join(a[i1:i2]), "\n".join(b[j1:j2])))
        out.append("\n")
    return "".join(out).rstrip("\n")


def _words(before: str, after: str) -> str:
    x, y = _TOKEN.findall(before), _TOKEN.findall(after)
    parts = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(html.escape("".join(x[i1:i2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{html.escape(''.join(x[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{html.escape(''.join(y[j1:j2]))}</ins>")
    return "".join(parts)


def _unchanged(text: str, *, first: bool, last: bool) -> str:
    """Unchanged text around the changes: its ends only, when it is long."""
    keep_start = 0 if first else _CONTEXT
    keep_end = 0 if last else _CONTEXT
    if len(text) <= keep_start + keep_end + 40:
        return html.escape(text)
    head, tail = text[:keep_start], text[len(text) - keep_end:] if keep_end else ""
    return f'{html.escape(head)}<span class="mirror-elided">…</span>{html.escape(tail)}'
