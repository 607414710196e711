"""A second hostile review of the running product: what it found, each reproduced (`pytest -m hostile`).

The charset that stopped every run is in test_poison.py; the Chromium side of
the CSP is in test_browser.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
import sqlite3

import pytest
import sqlite_utils
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

from mirror.extract.css import css_references
from mirror.plugin.views import MAX_CSS_BYTES, defuse_html

from .conftest import run_mirror
from .test_hostile_input import archive, ds  # noqa: F401 - the same hostile archive, fixtures of this module too

pytestmark = pytest.mark.hostile


def get(ds: Datasette, path: str, **kwargs):
    async def go():
        await ds.invoke_startup()
        return await ds.client.get(path, **kwargs)

    return asyncio.run(go())


LOCKED = {"allow": {"id": "root"}}


@pytest.mark.parametrize(
    "path",
    [
        "/mirror/pages.json?_search=hostile",
        "/mirror/pages?_search=hostile",
        "/-/mirror/search?q=hostile",
        "/-/mirror/search?q=hostile&_format=json",
        "/",
        "/-/mirror/page/1",
        "/-/mirror/snapshot/1",
    ],
)
def test_a_locked_archive_stays_locked_through_every_route_of_ours(archive, path):
    """datasette's permissions said 403 for /mirror/pages.json, while ?_search= answered 200 with every row."""
    for metadata in ({"allow": LOCKED["allow"]}, {"databases": {"mirror": LOCKED}}):
        locked = Datasette([str(archive / "mirror.db")], metadata=metadata)
        response = get(locked, path)
        if response.status_code == 302:  # the table's search goes to the search page, which says 403
            assert response.headers["location"].startswith("/-/mirror/search?q=")
            response = get(locked, response.headers["location"])
        assert response.status_code == 403, (metadata, path, response.status_code)
        assert "Hostile archive test article" not in response.text
    root = Datasette([str(archive / "mirror.db")], metadata={"allow": LOCKED["allow"]})
    cookie = {"ds_actor": root.sign({"a": {"id": "root"}}, "actor")}
    response = get(root, path, cookies=cookie)
    if response.status_code == 302:
        response = get(root, response.headers["location"], cookies=cookie)
    assert response.status_code in (200, 404)


@pytest.mark.parametrize(
    "path",
    [
        "/?page=99999999999999999999",
        "/mirror/pages?_search=hostile&_next=99999999999999999999",
        "/mirror/pages.json?_search=hostile&_next=99999999999999999999",
    ],
)
def test_huge_paging_numbers_are_not_a_500(ds, path):
    assert get(ds, path).status_code == 200


def test_size_zero_never_gives_a_next_page_that_does_not_advance(ds):
    data = get(ds, "/mirror/pages.json?_search=hostile&_size=0").json()
    assert data["rows"] or data.get("next") is None  # (no page of nothing that points at itself)


def test_bad_json_in_a_hand_edited_row_does_not_break_table_search(tmp_path, archive):
    """The table's search goes to the search page, which reads no JSON column; datasette's own
    table view (JSON) facets `seeds` as an array: there malformed JSON is its clear 400, as on the
    table without a search (datasette 1.0: a 500 of its own), and without facets the rows come."""
    copy = tmp_path / "mirror.db"
    with sqlite3.connect(archive / "mirror.db") as source, sqlite3.connect(copy) as target:
        source.backup(target)
    sqlite_utils.Database(copy).execute("update pages set seeds = 'not json', sections = '{\"a\": 1}'")
    edited = Datasette([str(copy)])
    page = get(edited, get(edited, "/mirror/pages?_search=hostile").headers["location"])
    assert page.status_code == 200 and "reader-link" in page.text
    faceted = get(edited, "/mirror/pages.json?_extra=facet_results&_search=hostile")
    assert faceted.status_code in (400, 500) and "malformed JSON" in faceted.text
    assert get(edited, "/mirror/pages.json?_search=hostile&_nofacet=1").json()["rows"]


@pytest.mark.parametrize("path", ["/", "/-/mirror/search?q=hostile", "/-/mirror/page/1"])
def test_our_html_pages_forbid_inline_script_but_datasettes_version_line(ds, path):
    """datasette 1.0's base.html writes one inline line; its hash is allowed, nothing else inline."""
    csp = get(ds, path).headers["content-security-policy"]
    line = f"window.datasetteVersion = '{datasette_version}';"
    digest = base64.b64encode(hashlib.sha256(line.encode()).digest()).decode()
    script_src = next(part for part in csp.split(";") if part.strip().startswith("script-src")).split()
    assert script_src == ["script-src", "'self'", f"'sha256-{digest}'"]


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

    response = get(datasette, "/-/mirror/resource?url=" + quote(css_url, safe=""))
    assert response.status_code == 200 and response.text.startswith("/* not served")


def test_snapshots_drop_every_attribute_that_loads_from_the_network():
    page = """<html><body background="http://leak.test/b.png"><table background="http://leak.test/t.png"><tr><td>x</td></tr></table>
    <picture><source srcset="http://leak.test/s.png 1x"><img src="http://leak.test/i.png"></picture>
    <video poster="http://leak.test/p.png"></video><input type="image" src="http://leak.test/in.png">
    <svg><image href="http://leak.test/svg.png"/><use href="http://leak.test/u.svg#a"/></svg><a ping="http://leak.test/ping" href="/x">x</a>
    </body></html>"""

    class Urls:
        class urls:
            path = staticmethod(lambda p: p)

    cleaned = defuse_html(page, "http://page.test/", set(), Urls)
    assert "leak.test" not in cleaned, cleaned


def test_a_css_namespace_is_not_a_requisite():
    css = '@namespace url(http://www.w3.org/2000/svg); @namespace svg url("http://example.com/ns"); body { background: url(/bg.png) }'
    assert css_references(css, "http://site.test/a.css") == ["http://site.test/bg.png"]


def test_bad_command_lines_are_clear_errors_never_tracebacks(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "mirror.db").write_bytes(b"garbage, not SQLite")
    cases = [
        (["serve", "--archive", str(bad)], 1, "not a database"),
        (["fetch", "http://127.0.0.1:9/\udcff"], 2, "not valid UTF-8"),
        (["show", "\udcff", "--archive", str(bad)], 2, "not valid UTF-8"),
        (["fetch", "--header", "X: a\r\nInjected: 1", "http://127.0.0.1:9/"], 2, "line breaks"),
        (["fetch", "--user-agent", "UA\nX-Evil: 1", "http://127.0.0.1:9/"], 2, "line breaks"),
    ]
    for args, code, message in cases:
        result = run_mirror(*args, cwd=tmp_path, env={"PYTHONIOENCODING": "utf-8:surrogateescape"})
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)


def test_serve_on_a_port_in_use_says_so(tmp_path, archive):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_mirror("serve", "--archive", str(archive), "--port", str(port), cwd=tmp_path, timeout=60)
    assert result.returncode == 1 and "cannot listen" in result.stderr and "Traceback" not in result.stderr


def test_a_cookies_file_error_prints_no_emoji(tmp_path):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("root:x:0:0:root:/root:/bin/bash\n")
    result = run_mirror("fetch", "--cookies", str(cookies), "http://127.0.0.1:9/", cwd=tmp_path)
    assert result.returncode == 2 and "❌" not in result.stderr and "Traceback" not in result.stderr
