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
from ..check import link_health as health
from ._common import _BadRequest, _folder, _Missing, _read, _requested_page, _views, reader_csp

__all__ = ["change_notice", "compare_view", "diff_html", "versions_for_reader"]

# a token: one CJK character, a run of other letters or digits (a run of `\w` would run on into the
# Chinese after "2003": an insertion before it marked the clause struck and added again), a run of
# spaces, or one other character
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+|\\s+|.", re.S)
_CONTEXT = 160  # characters of unchanged text kept on each side of a change
MAX_DIFF_CHARS = 100_000  # of each version: a diff of longer texts compares their beginnings
MAX_PAIRS = 2_000_000  # tokens before x tokens after in one changed stretch: past it, the stretch is marked whole
EXTRACT_SECONDS = 20.0  # for re-extracting an older version's text from its capture
_WORDS = {
    "first": "first capture",
    "same": "unchanged",
    "changed": "changed",
    "moved": "moved",
    "gone": "gone",
    "soft_404": "soft 404",
    "blocked": "blocked",
    "failed": "could not check",
}


async def versions_for_reader(datasette, db, page: dict) -> list[dict]:
    """The page's versions, newest first, with what the reader shows of each."""
    rows = await _read(db, health.versions_of, page["url"])
    path = datasette.urls.path
    entries = [
        {
            **row,
            "what": _WORDS.get(row["state"], row["state"]),
            "snapshot": path(f"/-/mirror/page/{page['id']}/version/{row['id']}") if row["warc_file"] and row["state"] not in ("failed",) else None,
            "comparable": row["text_hash"] is not None or row["revisit_of"] is not None,  # (a revisit's text is its original's)
        }
        for row in rows
    ]
    comparable = [entry for entry in entries if entry["comparable"]]
    for entry, side in zip(comparable[:2], ("new", "old"), strict=False):  # the newest two, picked
        entry["checked"] = side
    return entries


def change_notice(datasette, page: dict, versions: list[dict]) -> dict | None:
    """What the top of the reader says of a page whose text changed since it was first saved:
    how often, when last, and the comparison of the first saved text with the latest one
    (None for a page that never changed)."""
    changed = [v for v in versions if v["state"] == "changed"]  # (newest first)
    comparable = [v for v in versions if v["comparable"]]
    if not changed or len(comparable) < 2:
        return None
    first, latest = comparable[-1], comparable[0]
    query = f"?a={first['id']}&b={latest['id']}"
    return {
        "times": len(changed),
        "first": first["captured_at"],
        "last": changed[0]["captured_at"],
        "compare": datasette.urls.path(f"/-/mirror/page/{page['id']}/compare") + query,
    }


@_views
async def compare_view(datasette, request):
    """Two versions of a page's article, the changes between them marked."""
    db, page_id, page = await _requested_page(datasette, request)
    versions = [await _version(db, page_id, request.args.get(key)) for key in ("a", "b")]
    texts = [await _text(db, page, v) for v in versions]
    # off the event loop, which serves every other request meanwhile: both are bounded (MAX_DIFF_CHARS, similar's sample)
    marked, changed = await asyncio.to_thread(lambda: (diff_html(texts[0], texts[1]), changed_fraction(texts[0], texts[1])))
    context = {
        "page": page,
        "a": versions[0],
        "b": versions[1],
        "diff": marked,
        "changed": changed,
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
    if version["text_hash"] is None and version["revisit_of"]:  # a revisit or a 304: its text is the version it repeats
        repeated = await _read(db, health.version_of, page_id, version["revisit_of"])
        version = (
            {
                **version,
                "text_hash": repeated["text_hash"],
                "warc_file": repeated["warc_file"],
                "warc_offset": repeated["warc_offset"],
                "warc_length": repeated["warc_length"],
                "revisit_of": None,
            }
            if repeated
            else version
        )
    if version["text_hash"] is None:
        raise _BadRequest(f"version {value} has no article to compare (it was {_WORDS.get(version['state'], version['state'])})")
    return version


async def _text(db, page: dict, version: dict) -> str:
    """A version's article text: the saved copy's when it is that one, else extracted again from its capture."""
    if version["text_hash"] == await asyncio.to_thread(text_hash, page.get("text")):  # (a 4 MB text: not on the event loop)
        return page.get("text") or ""
    capture = await db.execute_fn(lambda conn: health.version_capture(sqlite_utils.Database(conn), version))
    if capture is None:
        raise _Missing("the capture of this version is not in the archive")
    from ..extract.article import extract_capture
    from ..store.queries import warc_location

    location = warc_location(capture)
    if location is None:
        raise _Missing("the capture of this version is not in the archive")
    try:
        extracting = asyncio.to_thread(extract_capture, _folder(db), location, capture["final_url"] or page["url"])
        article = await asyncio.wait_for(extracting, EXTRACT_SECONDS)
    except TimeoutError:
        raise _Missing(f"the text of this version took more than {EXTRACT_SECONDS:g} s to read again") from None
    except Exception as exc:  # noqa: BLE001 - a damaged capture is a missing one
        raise _Missing(f"the capture of this version cannot be read: {exc}") from None
    return article.text or ""


def diff_html(before: str, after: str) -> str:
    """`after` against `before` as HTML: removed text in <del>, added text in <ins>, long
    unchanged stretches shortened. Paragraphs are matched first, then the words (characters, in
    Chinese) of the paragraphs that changed; a changed stretch too long to match word by word in
    bounded time (MAX_PAIRS) is marked whole."""
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
    head = 0  # the tokens both share at their start and end, kept out of the matching (a small edit in a long paragraph)
    while head < min(len(x), len(y)) and x[head] == y[head]:
        head += 1
    tail = 0
    while tail < min(len(x), len(y)) - head and x[-1 - tail] == y[-1 - tail]:
        tail += 1
    same_start, same_end = html.escape("".join(x[:head])), html.escape("".join(x[len(x) - tail :]))
    x, y = x[head : len(x) - tail], y[head : len(y) - tail]
    if len(x) * len(y) > MAX_PAIRS:  # too long to match word by word in bounded time: the stretch changed whole
        changed = (f"<del>{html.escape(''.join(x))}</del>" if x else "") + (f"<ins>{html.escape(''.join(y))}</ins>" if y else "")
        return same_start + changed + same_end
    parts = [same_start]
    for op, i1, i2, j1, j2 in SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(html.escape("".join(x[i1:i2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{html.escape(''.join(x[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{html.escape(''.join(y[j1:j2]))}</ins>")
    return "".join(parts) + same_end


def _unchanged(text: str, *, first: bool, last: bool) -> str:
    """Unchanged text around the changes: its ends only, when it is long."""
    keep_start = 0 if first else _CONTEXT
    keep_end = 0 if last else _CONTEXT
    if len(text) <= keep_start + keep_end + 40:
        return html.escape(text)
    head, tail = text[:keep_start], text[len(text) - keep_end :] if keep_end else ""
    return f'{html.escape(head)}<span class="mirror-elided">…</span>{html.escape(tail)}'
