"""Hostile input in an archive (issue 10 and the reviews after it), each attack reproduced: stored
XSS through alt text, bookmarklets and javascript: links; inline script and the CSP; snapshots
that load nothing; crafted WARC paths; locked archives; `mirror serve` for loopback names only;
terminal escapes and rich markup in the CLI; no code run from the working folder."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import httpx
import nh3
import pytest
import sqlite_utils
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

from mirror.plugin.views import defuse_html, local_images
from mirror.warc import WarcError, WarcLocation, read_payload

from .helpers import ds_get, free_port
from .webserver import article

pytestmark = pytest.mark.hostile


def page_id(hostile_archive: Path, url_end: str) -> int:
    db = sqlite_utils.Database(hostile_archive / "mirror.db")
    return next(db.query("select id from pages where url like ?", [f"%{url_end}"]))["id"]


def article_of(html: str) -> str:
    return html.split('<article class="mirror-article">', 1)[1].split("</article>", 1)[0]


CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _urls(hostile_archive: Path) -> list[str]:
    return [r["url"] for r in sqlite_utils.Database(hostile_archive / "mirror.db").query("select url from pages")]


LOCKED = {"allow": {"id": "root"}}


def test_installed_nh3_escapes_lt_inside_attributes():
    """nh3 0.2.17-0.3.6 leave `<` raw in attribute values; pyproject requires a later one."""
    cleaned = nh3.clean('<img src="x" alt="&lt;img src=x onerror=alert(1)//">')
    assert "&lt;img" in cleaned and "<img src=x" not in cleaned, (version("nh3"), cleaned)


def test_alt_text_is_escaped_by_our_code_whatever_the_sanitiser_left():
    # what nh3 0.3.6 returns for alt="&lt;img src=x onerror=alert(1)//"
    old_nh3_output = '<p><img src="http://x.invalid/a.png" alt="<img src=x onerror=alert(1)//"></p>'
    html = local_images(old_nh3_output, "http://x.invalid/", set(), datasette=None)
    assert "<img src=x" not in html
    assert '<span class="missing-image">[image not archived: &lt;img src=x onerror=alert(1)//]</span>' in html


def test_reader_runs_no_inline_script_and_its_csp_forbids_one(hostile_ds, hostile_archive):
    response = ds_get(hostile_ds, f"/-/mirror/page/{page_id(hostile_archive, '/xss-alt')}")
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    script_src = re.search(r"script-src ([^;]*)", csp)[1]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", response.text), "an inline <script> in our own page"
    article = article_of(response.text)
    assert "[image not archived: &lt;img src=x onerror=alert(" in article
    assert "<img src=x" not in article and "onerror=alert('text')>" not in article
    # the menu script moved to a file datasette serves
    src = re.search(r'<script src="([^"]+close-open-menus\.js)"', response.text)[1]
    assert ds_get(hostile_ds, src).status_code == 200
    search_page = ds_get(hostile_ds, "/-/mirror/search?q=hostile")
    assert "'unsafe-inline'" not in re.search(r"script-src ([^;]*)", search_page.headers["content-security-policy"])[1]


@pytest.mark.parametrize("path", ["/", "/-/mirror/search?q=hostile", "/-/mirror/page/1"])
def test_our_html_pages_forbid_inline_script_but_datasettes_version_line(hostile_ds, path):
    """datasette 1.0's base.html writes one inline line; its hash is allowed, nothing else inline."""
    csp = ds_get(hostile_ds, path).headers["content-security-policy"]
    line = f"window.datasetteVersion = '{datasette_version}';"
    digest = base64.b64encode(hashlib.sha256(line.encode()).digest()).decode()
    script_src = next(part for part in csp.split(";") if part.strip().startswith("script-src")).split()
    assert script_src == ["script-src", "'self'", f"'sha256-{digest}'"]


def test_a_bookmarklet_seed_is_shown_as_text_never_as_a_link(hostile_ds, hostile_archive):
    bookmarklet = page_id(hostile_archive, "})()")
    html = ds_get(hostile_ds, f"/-/mirror/page/{bookmarklet}").text
    assert "javascript:(function(){alert(&#39;bookmarklet&#39;)})()" in html  # shown
    assert not re.search(r"""href\s*=\s*["']?\s*javascript""", html, re.I)  # never a link
    table = ds_get(hostile_ds, "/mirror/pages?_search=&status=skipped").text + ds_get(hostile_ds, "/mirror/links").text
    assert not re.search(r"""href\s*=\s*["']?\s*javascript""", table, re.I)


def test_javascript_links_in_an_article_keep_their_words_only(hostile_ds, hostile_archive):
    article = article_of(ds_get(hostile_ds, f"/-/mirror/page/{page_id(hostile_archive, '/xss-alt')}").text)
    assert re.search(r">click javascript</a>\s+and\s+<a[^>]*>this</a>\s+too", article)
    assert "javascript:" not in article and "vbscript" not in article and "&gt;)" not in article
    assert not re.search(r"<a [^>]*href", article)  # neither link survives as a link


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


def test_a_script_capture_is_only_a_download(hostile_ds, hostile_archive):
    response = ds_get(hostile_ds, f"/-/mirror/snapshot/{page_id(hostile_archive, '/script.js')}")
    assert response.status_code == 200
    assert response.headers["content-disposition"].startswith("attachment")
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"].startswith("sandbox")


@pytest.mark.parametrize("path", ["/-/mirror/page/x", "/-/mirror/snapshot/x", "/-/mirror/page/99999999999999999999999", "/-/mirror/page/-1"])
def test_a_bad_page_id_is_a_404(hostile_ds, path):
    response = ds_get(hostile_ds, path)
    assert response.status_code == 404 and "no such page" in response.text


def test_warc_paths_are_confined_to_the_archive(tmp_path, hostile_archive):
    crafted = tmp_path / "crafted"
    shutil.copytree(hostile_archive, crafted)
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:TOPSECRET line\n")
    (crafted / "warc" / "notes.txt").write_text("inside but not a WARC: HIDDEN words\n")
    conn = sqlite3.connect(crafted / "mirror.db")
    with conn:
        conn.execute("update pages set warc_file = ?, warc_offset = 0, warc_length = 100 where url like '%/xss-alt'", ["../../passwd"])
        conn.execute("update pages set warc_file = ?, warc_offset = 0, warc_length = 100 where url like '%/markup'", [str(secret)])
        conn.execute("update pages set warc_file = 'notes.txt', warc_offset = 0, warc_length = 100 where url like '%/terminal'")
        conn.execute("update pages set warc_offset = -5 where url like '%/script.js'")
    conn.close()
    crafted_ds = Datasette([str(crafted / "mirror.db")])
    for end in ("/xss-alt", "/markup", "/terminal", "/script.js"):
        response = ds_get(crafted_ds, f"/-/mirror/snapshot/{page_id(crafted, end)}")
        assert response.status_code == 404, (end, response.status_code)
        assert "root:x" not in response.text and "TOPSECRET" not in response.text and "HIDDEN" not in response.text
    for location in (
        WarcLocation("../../passwd", 0, 100),
        WarcLocation(str(secret), 0, 100),
        WarcLocation("notes.txt", 0, 100),
        WarcLocation("", 0, 10),
        WarcLocation("notes.txt", -1, 10),
        WarcLocation("a\x00b", 0, 10),
    ):
        with pytest.raises(WarcError) as error:
            read_payload(crafted, location)
        assert "root:x" not in str(error.value) and "HIDDEN" not in str(error.value)


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
def test_a_locked_archive_stays_locked_through_every_route_of_ours(hostile_archive, path):
    """datasette's permissions said 403 for /mirror/pages.json, while ?_search= answered 200 with every row."""
    for metadata in ({"allow": LOCKED["allow"]}, {"databases": {"mirror": LOCKED}}):
        locked = Datasette([str(hostile_archive / "mirror.db")], metadata=metadata)
        response = ds_get(locked, path)
        if response.status_code == 302:  # the table's search goes to the search page, which says 403
            assert response.headers["location"].startswith("/-/mirror/search?q=")
            response = ds_get(locked, response.headers["location"])
        assert response.status_code == 403, (metadata, path, response.status_code)
        assert "Hostile archive test article" not in response.text
    root = Datasette([str(hostile_archive / "mirror.db")], metadata={"allow": LOCKED["allow"]})
    cookie = {"ds_actor": root.sign({"a": {"id": "root"}}, "actor")}
    response = ds_get(root, path, cookies=cookie)
    if response.status_code == 302:
        response = ds_get(root, response.headers["location"], cookies=cookie)
    assert response.status_code in (200, 404)


def test_serve_answers_only_requests_for_loopback_names(hostile_archive):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--port", str(port), "--archive", str(hostile_archive), "--allow-host", "mirror.test"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}/-/mirror/search"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("mirror serve did not start: " + server.stderr.read().decode())
                time.sleep(0.2)
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example", ""):
            response = httpx.get(base, headers={"Host": host}, timeout=5)
            assert response.status_code == 400, host
            assert "localhost" in response.text and "mirror" in response.text
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "mirror.test", f"[::1]:{port}"):
            assert httpx.get(base, headers={"Host": host}, timeout=5).status_code == 200, host
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_show_and_search_print_no_control_characters(cli, hostile_archive):
    terminal_url = next(u for u in _urls(hostile_archive) if u.endswith("/terminal"))
    shown = cli("show", terminal_url, "--archive", str(hostile_archive))
    assert shown.exit_code == 0 and "escapeword in red" in shown.output
    assert not CONTROL.search(shown.output), repr(shown.output[:400])
    found = cli("search", "plain", "--archive", str(hostile_archive))  # the snippet holds the escapes
    assert found.exit_code == 0 and terminal_url in found.output and "pwned" in found.output
    assert not CONTROL.search(found.output), repr(found.output[:400])
    as_json = cli("search", "plain", "--json", "--archive", str(hostile_archive))
    assert not CONTROL.search(as_json.output)
    assert json.loads(as_json.output)[0]["url"] == terminal_url  # still valid JSON


def test_rich_markup_in_arguments_and_archived_text_is_printed_literally(cli, hostile_archive):
    result = cli("search", "[/]", "--archive", str(hostile_archive))
    assert result.exit_code == 0 and "no saved article matches '[/]'" in result.output
    result = cli("show", "[/]", "--archive", str(hostile_archive))
    assert result.exit_code == 1 and "[/]: no such page" in result.output
    markup_url = next(u for u in _urls(hostile_archive) if u.endswith("/markup"))
    shown = cli("show", markup_url, "--archive", str(hostile_archive))
    assert shown.exit_code == 0 and "[/] [bold red]markup[/]" in shown.output
    found = cli("search", "markup", "--archive", str(hostile_archive))
    assert found.exit_code == 0 and "[bold red]markup[/]" in found.output


def test_a_module_in_the_working_folder_never_runs(tmp_path, web):
    planted = (
        "import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), f'RAN-{os.getpid()}'), 'w').close()\nraise ImportError('planted')\n"
    )
    for name in ("pickle.py", "trafilatura.py", "lxml.py"):
        (tmp_path / name).write_text(planted)
    url = web.add("/planted", article("种下的模块"))
    (tmp_path / "long.md").write_text("".join(f"- {url}?n={i}\n" for i in range(2_000)))
    mirror = Path(sys.executable).with_name("mirror")  # the console script, as a user runs it
    env = {k: v for k, v in os.environ.items() if k not in ("MIRROR_ARCHIVE", "PYTHONSAFEPATH")}
    for args in (["links", "long.md", "--archive", "lists"], ["fetch", url, "--delay", "0", "--browser", "never"]):
        done = subprocess.run([str(mirror), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.glob("RAN-*")) == []
    assert sqlite_utils.Database(tmp_path / "lists" / "mirror.db")["links"].count == 2_000
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    assert db["pages"].get(url)["status"] == "archived"
