"""Page requisites: which URLs a page's styles load, captured by a real fetch and served
back from the archive with every reference made local."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import quote

import pytest
from datasette.app import Datasette

from mirror.extract.css import css_references, page_requisites, rewrite_css
from mirror.plugin._origin import resource_key
from mirror.plugin.views import MAX_CSS_BYTES
from mirror.store import Archive

from .helpers import ds_get, fetch, fetch_urls, run_mirror
from .webserver import PNG, article

CSS = """@charset "utf-8";
@import "theme.css";
@import url(print.css) print;
@font-face { font-family: F; src: url("../fonts/f.woff2") format("woff2"), url(data:font/woff2;base64,AAAA) format("woff2"); }
body { background: #fff url( '/img/bg.png' ) no-repeat; }
a { background-image: url(javascript:alert(1)); }
/* url(commented-out.png) */
"""


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Styled</title>
<link rel="stylesheet" href="/css/site.css"><link rel="stylesheet" href="/css/missing.css">
<style>h1 { background: url(/img/inline.png) } </style></head>
<body><article><h1>Styled</h1><p>A page whose looks come from stylesheets: a linked one that imports another,
a web font and background images, one of them referenced from an inline style block, and a stylesheet
that is missing on the server, so that the snapshot has to do without it.</p></article></body></html>"""


SITE = """@import "theme.css"; @font-face { font-family: P; src: url(/fonts/p.woff2) }
body { background: url(/img/bg.png) } a { background: url(http://elsewhere.invalid/x.png) }"""


EVIL_THEME = """p { color: red } </style><script>alert(1)</script>"""


@pytest.fixture(scope="module")
def styled_archive(tmp_path_factory):
    from .webserver import HostileServer

    folder = tmp_path_factory.mktemp("requisites")
    with HostileServer() as web:
        url = web.add("/page", PAGE.encode())
        web.add("/css/site.css", SITE.encode(), content_type="text/css")
        web.add("/css/theme.css", EVIL_THEME.encode(), content_type="text/css")
        web.add("/fonts/p.woff2", b"wOF2 not really a font", content_type="application/octet-stream")
        web.add("/img/bg.png", PNG, content_type="image/png")
        web.add("/img/inline.png", PNG, content_type="image/png")
        fetch_urls(folder, [url], retries=0, workers=1)
    return folder / "archive", url


def test_css_references_are_imports_fonts_and_images():
    assert css_references(CSS, "http://h.test/css/site.css") == [
        "http://h.test/css/theme.css",
        "http://h.test/css/print.css",
        "http://h.test/fonts/f.woff2",
        "http://h.test/img/bg.png",
    ]


def test_rewrite_css_leaves_nothing_pointing_at_the_web():
    local = {"http://h.test/css/theme.css": "/r?theme", "http://h.test/img/bg.png": "/r?bg"}
    css = rewrite_css(CSS, "http://h.test/css/site.css", local.get)
    assert '@import "/r?theme"' in css and 'url("/r?bg")' in css
    assert "data:font/woff2;base64,AAAA" in css  # self-contained, kept
    assert "print.css" not in css and "f.woff2" not in css and "javascript" not in css
    assert "h.test" not in css
    assert "font-family: F" in css and "no-repeat" in css  # the rest is untouched


def test_a_pages_stylesheets_and_style_images_are_its_requisites():
    html = """<html><head><base href="http://cdn.test/assets/">
    <link rel="stylesheet" href="a.css"><link rel="Alternate Stylesheet" href="b.css">
    <link rel="icon" href="favicon.ico"><link rel="stylesheet" href="javascript:alert(1)">
    <style>@import "c.css"; p { background: url(d.png) }</style></head>
    <body><div style="background-image: url('e.jpg')"></div></body></html>"""
    assert page_requisites(html, "http://h.test/page") == [
        "http://cdn.test/assets/a.css",
        "http://cdn.test/assets/b.css",
        "http://cdn.test/assets/c.css",
        "http://cdn.test/assets/d.png",
        "http://cdn.test/assets/e.jpg",
    ]
    assert page_requisites("\x00 not html", "http://h.test/") == []


def test_fetch_captures_stylesheets_imports_fonts_and_images(styled_archive):
    archive_dir, url = styled_archive
    with Archive(archive_dir) as archive:
        resources = {r["url"].split("/", 3)[-1]: r["status"] for r in archive.db.query("select url, status from resources where page_url = ?", [url])}
    assert resources == {
        "css/site.css": "archived",
        "css/missing.css": "failed",  # recorded with its reason, like every link
        "css/theme.css": "archived",
        "fonts/p.woff2": "archived",
        "img/bg.png": "archived",
        "img/inline.png": "archived",
        "x.png": "failed",  # elsewhere.invalid: does not resolve
    }


def test_snapshot_serves_styles_from_the_archive(styled_archive):
    archive_dir, url = styled_archive
    ds = Datasette([str(archive_dir / "mirror.db")])
    get = lambda path: asyncio.run(ds.client.get(path))  # noqa: E731
    with Archive(archive_dir) as archive:
        page_id = next(archive.db.query("select id from pages where url = ?", [url]))["id"]
    snapshot = get(f"/-/mirror/snapshot/{page_id}")
    html = snapshot.text
    site = "/-/mirror/resource?url=" + quote(url.replace("/page", "/css/site.css"), safe="")
    assert f'<link rel="stylesheet" href="{site}&amp;key={resource_key(url.replace("/page", "/css/site.css"))}">' in html
    assert "missing.css" not in html and "127.0.0.1" not in html.split("Archived copy of", 1)[1].split("</div>", 1)[1]
    assert re.search(r"h1 \{ background: url\(\"/-/mirror/resource\?url=[^\"]+inline\.png&key=[0-9a-f]{32}\"\) \}", html)
    csp = snapshot.headers["content-security-policy"]
    assert csp.startswith("sandbox") and "default-src 'none'" in csp and "script-src" not in csp
    css = get(site)
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "127.0.0.1" not in css.text.replace(quote("http://127.0.0.1", safe=""), "")  # only local references
    assert "elsewhere.invalid" not in css.text and 'url("")' in css.text
    assert css.headers["x-content-type-options"] == "nosniff"
    font_url = url.replace("/page", "/fonts/p.woff2")
    font = get("/-/mirror/resource?url=" + quote(font_url, safe=""))
    assert font.status_code == 200 and "access-control-allow-origin" not in font.headers  # never *
    keyed = asyncio.run(ds.client.get(f"/-/mirror/resource?url={quote(font_url, safe='')}&key={resource_key(font_url)}", headers={"Origin": "null"}))
    assert keyed.headers["access-control-allow-origin"] == "null"  # the sandboxed snapshot, loading it in CORS mode
    theme = get("/-/mirror/resource?url=" + quote(url.replace("/page", "/css/theme.css"), safe=""))
    assert theme.headers["content-type"].startswith("text/css")  # never served as HTML, whatever it holds


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ('a:before { content: "\\f101" } b { background: url(q.png) }', ["q.png"]),  # icon fonts: the fast path
        ("\\75 rl(x.png)", ["x.png"]),  # an escaped keyword
        ("b { background: \\u\\r\\l(y.png) }", ["y.png"]),
        ('@\\69mport "z.css";', ["z.css"]),
        ("b { background: url(a\\)b.png) }", ["a)b.png"]),  # escapes inside the reference
        ('b { background: url("a)\\"b.png") }', ['a)"b.png']),
        ("@import 'x\\'y.css';", ["x'y.css"]),
        ('a { content: "\\e900" } /* url(c.png) */', []),
    ],
)
def test_css_escapes_are_read_as_a_browser_reads_them(css, expected):
    assert css_references(css, "http://h.test/") == [f"http://h.test/{u}" for u in expected]


def test_the_cheap_loads_filter_agrees_with_its_regex():
    """`_loads` skips the case-insensitive regex; it must say yes wherever the regex matches
    (İ and ı match "i" under re.I), or a page's styles would lose their references."""
    import random

    from mirror.extract.css import _LOADS, _loads

    alphabet = list("urlURL@impoIMPOt\\ (\"':;x") + ["\u0130", "\u0131", "\u212a", "中", "ſ"]
    rng = random.Random(7)
    cases = ["", "url(", "URL(a)", "@IMPORT 'x'", "@\u0130mport 'x.css'", "@\u0131mport 'x.css'", "\\75 rl(x)", "color: 红"]
    cases += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))) for _ in range(20000)]
    for css in cases:
        assert _loads(css) == bool(_LOADS.search(css)), css


def test_the_reference_scan_finds_what_the_regex_finds():
    """`_reference_matches` tries the case-insensitive regex only where `url(` or `@import`
    starts; it must find the same matches as scanning with it everywhere (İ, ı, K and ſ fold
    under re.I; İ also changes length under lower())."""
    import random

    from mirror.extract.css import _REFERENCE, _reference_matches

    alphabet = list("urlURL@impoIMPOt()\"' ;x/:") + ["\u0130", "\u0131", "\u212a", "中", "ſ", "  "]
    rng = random.Random(11)
    cases = ["url(a) URL( 'b' ) @import 'c'", '@IMPORT "x" url(url(y))', "url(@import 'a')", "uRl(x)url(y)", "\u0130 url(a)", "@\u0131mport 'x'"]
    cases += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40))) for _ in range(30000)]
    for css in cases:
        assert [m.span() for m in _reference_matches(css)] == [m.span() for m in _REFERENCE.finditer(css)], css


@pytest.mark.hostile
def test_a_css_namespace_is_not_a_requisite():
    css = '@namespace url(http://www.w3.org/2000/svg); @namespace svg url("http://example.com/ns"); body { background: url(/bg.png) }'
    assert css_references(css, "http://site.test/a.css") == ["http://site.test/bg.png"]


@pytest.mark.hostile
def test_a_utf7_stylesheet_is_read_as_a_browser_reads_it(tmp_path, web):
    web.add("/u7.css", b'@charset "utf-7"; body { background: url(/bg+2AA-.png) }', content_type="text/css")
    web.add("/bg+2AA-.png", b"\x89PNG\r\n\x1a\nbg", content_type="image/png")
    url = web.add("/utf7", article("七位", '<link rel="stylesheet" href="/u7.css">'))
    other = web.add("/other", article("另一篇", '<img src="/bg+2AA-.png">'))
    db, _ = fetch(tmp_path, [url, other])
    assert db["pages"].get(url)["status"] == "archived" and db["pages"].get(other)["status"] == "archived"
    resources = {r["url"]: r["status"] for r in db["resources"].rows}
    assert resources[web.url("/u7.css")] == "archived" and resources[web.url("/bg+2AA-.png")] == "archived"


@pytest.mark.hostile
def test_a_huge_archived_stylesheet_is_not_rewritten_on_the_event_loop(tmp_path, web):
    """400k url() rules took 50 s to rewrite while every other request waited."""
    css = b"".join(b".r%d{background:url(/i%d.png)}\n" % (i, i) for i in range(120_000))
    assert len(css) > MAX_CSS_BYTES
    css_url = web.add("/huge.css", css, content_type="text/css")
    html = f'<html><head><link rel="stylesheet" href="{css_url}"></head><body><article><p>{"Words to read here. " * 60}</p></article></body></html>'
    url = web.add("/styled-huge", html.encode())
    result = run_mirror("fetch", url, "--delay", "0", "--browser", "never", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    datasette = Datasette([str(tmp_path / "archive" / "mirror.db")])
    from urllib.parse import quote

    response = ds_get(datasette, "/-/mirror/resource?url=" + quote(css_url, safe=""))
    assert response.status_code == 200 and response.text.startswith("/* not served")
