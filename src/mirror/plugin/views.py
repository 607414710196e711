"""The plugin's pages: search, reader view, raw snapshot, archived resources.

Everything is served from the archive; nothing here touches the network.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from urllib.parse import quote, urlencode

import nh3
import sqlite_utils
from datasette import Response
from markdown_it import MarkdownIt

from .._util.text import count
from ..check import link_health as health
from ..extract.charset import decode_html
from ..extract.css import MAX_CSS_BYTES
from ..extract.images import LAZY_ATTRIBUTES, LAZY_SRCSETS, document_base, image_source, is_fallback_copy
from ..search import SearchError, parse_limit, search
from ..store import queries
from ..urls import web_url
from ._common import _archive, _BadRequest, _Missing, _page_id, _payload, _read, _requested_page, _views, reader_csp
from ._origin import resource_key
from .screenshots import screenshot_url, screenshot_urls
from .snapshot_styles import apply_styles, collect_styles, is_font, is_stylesheet, serve_css
from .versions import change_notice, versions_for_reader

# Untrusted pages: no script, no network; only inline styles and our own images, stylesheets and fonts.
SNAPSHOT_CSP = (
    "sandbox; default-src 'none'; img-src 'self' data: {origin}; style-src 'unsafe-inline' {origin}; font-src {origin} data:; frame-ancestors 'self'"
)


class _EveryLink(MarkdownIt):
    """Parses every link, whatever its scheme: nh3 then drops hrefs that are not http(s) and
    keeps the words (markdown-it would leave "[words](javascript:…)")."""

    def validateLink(self, url: str) -> bool:  # (markdown-it's name)
        return True


_MARKDOWN = _EveryLink("commonmark").enable("table")
_WEB_SCHEMES = {"http", "https"}
_IMG = re.compile(r'<img\b[^>]*?\bsrc="([^"]*)"[^>]*>')
_ALT = re.compile(r'\balt="([^"]*)"')
_INLINE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon")


@_views
async def search_view(datasette, request):
    db = await _archive(datasette, request)
    query = request.args.get("q", "")
    try:
        limit = parse_limit(request.args.get("limit"), default=50)
        hits = await db.execute_fn(lambda conn: search(sqlite_utils.Database(conn), query, limit=limit)) if query else []
    except SearchError as exc:
        raise _BadRequest(str(exc)) from None
    if request.args.get("_format") == "json":
        return Response.json([h.as_dict(("<mark>", "</mark>")) for h in hits])
    rows = [
        {
            **hit.as_dict(),
            "reader": datasette.urls.path(f"/-/mirror/page/{hit.id}"),
            "snippet_html": html.escape(hit.as_dict(("\x02", "\x03"))["snippet"]).replace("\x02", "<mark>").replace("\x03", "</mark>"),
        }
        for hit in hits
    ]
    shots = await screenshot_urls(datasette, db, [hit.id for hit in hits])
    for row in rows:
        row["screenshot"] = shots.get(row["id"])
    table = datasette.urls.table(db.name, "pages") + "?" + urlencode({"_search": query, "_sort": "title"})  # datasette's table view
    return Response.html(
        await datasette.render_template("mirror_search.html", {"q": query, "hits": rows, "table_url": table}, request=request),
        headers={"Content-Security-Policy": reader_csp()},
    )


@_views
async def reader_view(datasette, request):
    db, page_id, page = await _requested_page(datasette, request)
    origins = await _read(db, queries.origins, page["url"])
    attempts = await _read(db, queries.attempts_of, page["url"])
    archived = await _read(db, queries.archived_resource_urls)
    markdown = page.get("markdown") or ""
    if page.get("title") and markdown.startswith(f"# {page['title']}\n"):
        markdown = markdown.split("\n", 1)[1]  # the page heading already shows the title
    article = _article_html(markdown, page.get("final_url") or page["url"], archived, datasette)
    versions = await versions_for_reader(datasette, db, page)
    tags = [t.strip() for t in (page.get("tags") or "").split(",")] + [t.strip() for o in origins for t in (o.get("tags") or "").split(",")]
    context = {
        "page": page,
        "original": await _original(datasette, db, page),
        "original_href": web_url(page["url"]),
        "article": article,
        "origins": origins,
        "attempts": attempts,
        "snapshot": datasette.urls.path(f"/-/mirror/snapshot/{page_id}") if page.get("warc_file") else None,
        "tags": list(dict.fromkeys(t for t in tags if t)),  # the page's own, and those its links were saved with (Pocket, bookmarks)
        "screenshot": screenshot_url(datasette, page_id) if page.get("screenshot_warc_file") else None,
        "versions": versions,
        "changed": change_notice(datasette, page, versions),
        "compare": datasette.urls.path(f"/-/mirror/page/{page_id}/compare"),
        "added": _provenance(page),
    }
    body = await datasette.render_template("mirror_page.html", context, request=request)
    return Response.html(body, headers={"Content-Security-Policy": reader_csp()})


def _provenance(page: dict) -> dict | None:
    """Where a page the user added came from (the file, its format and date, what it says of
    itself), for the reader to show; None for a fetched page. Every value is shown as text."""
    if page.get("source") != "added":
        return None
    try:
        values = json.loads(page.get("provenance") or "{}")
    except ValueError:
        values = {}
    if not isinstance(values, dict):
        values = {}
    headers = values.get("headers")
    if not isinstance(headers, dict):
        headers = {}
    return {
        "file": str(values.get("file") or ""),
        "format": str(values.get("format") or ""),
        "saved_at": values.get("saved_at") if isinstance(values.get("saved_at"), str) else None,
        "added_via": str(values.get("added_via") or ""),
        "headers": {str(k): str(v)[:500] for k, v in list(headers.items())[:30]},
    }


async def _original(datasette, db, page: dict) -> dict | None:
    """A duplicate's original (`same_as`: the page archived first with the same article):
    its title and reader view; None for any other page."""
    same_as = page.get("same_as")
    if not same_as:
        return None
    row = (await db.execute("select id, title from pages where url = ?", [same_as])).first()
    if row is None:
        return {"title": same_as, "reader": None}
    return {"title": row["title"] or same_as, "reader": datasette.urls.path(f"/-/mirror/page/{row['id']}")}


@_views
async def snapshot_view(datasette, request):
    """The captured page itself, defused and sandboxed."""
    db = await _archive(datasette, request)
    page_id = _page_id(request)
    page = await _read(db, queries.page_by_id, page_id)
    if page is None or not page["warc_file"]:
        raise _Missing("no saved copy of this page")
    return await snapshot_of(datasette, request, db, page, page["final_url"] or page["url"], f"mirror-page-{page_id}")


@_views
async def version_snapshot_view(datasette, request):
    """One version of a page as it was captured (a revisit's payload is its original's), defused and sandboxed."""
    db = await _archive(datasette, request)
    page_id = _page_id(request)
    number = request.url_vars["version"]
    version = await _read(db, health.version_of, page_id, int(number)) if re.fullmatch(r"\d{1,18}", number) else None
    if version is None:
        raise _Missing("no such version of this page")
    capture = await _read(db, health.version_capture, version)
    if capture is None:
        raise _Missing("this version has no capture: the check got no answer to keep")
    return await snapshot_of(datasette, request, db, capture, capture["final_url"] or version["page_url"], f"mirror-page-{page_id}-{version['id']}")


async def snapshot_of(datasette, request, db, capture: dict, base: str, name: str) -> Response:
    """The capture `capture` points at (a page's, or one of its versions'), defused and sandboxed;
    `base` resolves its links, `name` is the file name of what is never shown inline."""
    headers, body = await _payload(db, capture)
    content_type = headers.get_header("Content-Type") or "application/octet-stream"
    origin = f"{request.scheme}://{request.host}"
    security = {
        "Content-Security-Policy": SNAPSHOT_CSP.format(origin=origin),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type in _INLINE_TYPES:
        return Response(body, content_type=media_type, headers=security)
    if "html" not in media_type:
        # scripts, SVG, PDF, text…: never rendered in our origin, only saved to disk
        disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(body, content_type="application/octet-stream", headers=security | disposition)
    archived = await _read(db, queries.archived_resource_urls)
    # parsing a big hostile page takes a while: never on the event loop that serves everyone
    cleaned = await asyncio.to_thread(lambda: defuse_html(decode_html(body, content_type), base, archived, datasette))
    return Response.html(cleaned, headers=security)


@_views
async def resource_view(datasette, request):
    """An archived image, by its original URL."""
    db = await _archive(datasette, request)
    url = request.args.get("url", "")
    row = await _read(db, queries.latest_resource, url)
    if row is None:
        raise _Missing("this resource was not archived")
    _, body = await _payload(db, row)
    content_type = row["content_type"] or "application/octet-stream"
    headers = {"Content-Security-Policy": "sandbox; default-src 'none'", "X-Content-Type-Options": "nosniff", "Cache-Control": "max-age=86400"}
    if is_stylesheet(content_type, url):  # served with its references made local
        if len(body) > MAX_CSS_BYTES:  # rewriting costs seconds per megabyte
            return Response(f"/* not served: {count(len(body), 'byte')} of CSS */", content_type="text/css; charset=utf-8", headers=headers)
        archived = await _read(db, queries.archived_resource_urls)
        local = lambda u: _resource_path(datasette, u) if u in archived else None  # noqa: E731
        css = await asyncio.to_thread(serve_css, body, content_type, url, local)
        return Response(css, content_type="text/css; charset=utf-8", headers=headers)
    if is_font(content_type, url):  # loaded in CORS mode: _origin allows the snapshot's opaque origin only
        return Response(body, content_type=content_type, headers=headers)
    if not content_type.startswith("image/"):
        raise _Missing("only archived images, stylesheets and fonts are served here")
    return Response(body, content_type=content_type, headers=headers)


def _resource_path(datasette, url: str) -> str:
    """With its key: the sandboxed snapshot's requests look cross-site and need it (see _origin)."""
    return datasette.urls.path(f"/-/mirror/resource?url={quote(url, safe='')}&key={resource_key(url)}")


def _article_html(markdown: str | None, base: str, archived: set[str], datasette) -> str:
    """Saved Markdown as sanitised HTML; images only from the archive."""
    if not markdown:
        return ""
    cleaned = nh3.clean(_MARKDOWN.render(markdown), url_schemes=_WEB_SCHEMES, link_rel="noopener noreferrer nofollow")
    return local_images(cleaned, base, archived, datasette)


def local_images(cleaned: str, base: str, archived: set[str], datasette) -> str:
    """Point archived images at the archive; others become a note with their alt text.

    Attribute values are re-escaped here, whatever the sanitiser left in them.
    """

    def local_image(match: re.Match) -> str:
        src = web_url(html.unescape(match[1]), base) or ""
        if src in archived:  # swap the src value itself (the same text may sit in alt too)
            tag, start, end = match[0], match.start(1) - match.start(), match.end(1) - match.start()
            return tag[:start] + html.escape(_resource_path(datasette, src)) + tag[end:]
        alt = _ALT.search(match[0])
        alt_text = html.escape(html.unescape(alt[1])) if alt else ""
        return f'<span class="missing-image">[image not archived{": " + alt_text if alt_text else ""}]</span>'

    return _IMG.sub(local_image, cleaned)


def _local_pictures(tree, base: str, archived: set[str], datasette) -> None:
    """Each <img> shows the picture the article shows (`image_source`: lazy attributes,
    srcset, <picture>), from the archive, or nothing; a <noscript> copy of a scripted
    image is dropped, as a browser running scripts never shows it (the sandbox runs none)."""
    seen: dict = {}
    copies = [img for img in tree.iter("img") if is_fallback_copy(img, seen)]
    for img in tree.iter("img"):
        chosen = image_source(img)
        src = web_url(chosen, base)
        for attribute in ("src", "srcset", *LAZY_ATTRIBUTES, *LAZY_SRCSETS):
            img.attrib.pop(attribute, None)
        if src in archived:
            img.set("src", _resource_path(datasette, src))
    for img in copies:
        noscript = next(img.iterancestors("noscript"), None)
        if noscript is not None and noscript.getparent() is not None:
            noscript.drop_tree()


_LOADING_ATTRIBUTES = frozenset({"srcset", "poster", "background", "lowsrc", "dynsrc", "ping", "imagesrcset"})


def defuse_html(page: str, base: str, archived: set[str], datasette) -> str:
    """Remove scripts, event handlers, javascript: links, refreshes and embeds; local images."""
    import lxml.html
    from lxml_html_clean import Cleaner

    cleaner = Cleaner(
        scripts=True,
        javascript=True,
        comments=True,
        style=False,
        inline_style=False,
        links=True,
        meta=True,
        page_structure=False,
        processing_instructions=True,
        embedded=True,
        frames=True,
        forms=True,
        annoying_tags=False,
        remove_unknown_tags=False,
        safe_attrs_only=False,
    )
    try:
        tree = lxml.html.document_fromstring(page)
    except (ValueError, lxml.etree.ParserError):
        return "<!doctype html><p>(this capture could not be parsed)</p>"
    styles = collect_styles(tree, base)  # the cleaner drops <link>s and @imports
    images_base = document_base(tree, base)
    tree = cleaner.clean_html(tree)
    apply_styles(tree, styles, base, lambda url: _resource_path(datasette, url) if url in archived else None)
    for element in tree.iter("base"):
        element.drop_tree()
    _local_pictures(tree, images_base, archived, datasette)
    for element in tree.iter():  # other ways to load from the network; the CSP blocks them too
        for attribute in _LOADING_ATTRIBUTES & set(element.attrib):
            del element.attrib[attribute]
        if element.tag in ("img", "image", "use", "feimage") or element.get("type", "").lower() == "image":
            # an <img>'s src is settled below: archived, or none
            for attribute in [a for a in element.attrib if a.endswith("href") or (a == "src" and element.tag != "img")]:
                del element.attrib[attribute]
    banner = lxml.html.fragment_fromstring(
        f'<div style="background:#ffd;border-bottom:1px solid #cc9;padding:4px 8px;font:13px sans-serif">'
        f"Archived copy of {html.escape(base)} — scripts removed, nothing loads from the network.</div>"
    )
    body = tree.find("body")
    if body is not None:
        body.insert(0, banner)
    return "<!doctype html>\n" + lxml.html.tostring(tree, encoding="unicode")
