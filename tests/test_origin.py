"""Other web pages probing a running archive (issue 10, leftovers), each reproduced.

Any page the user visits can make the browser load `http://127.0.0.1:<port>/…` as an
image, stylesheet, script, font or `fetch()`, and learn from load and error events
which pages have screenshots or images, or read fonts. A hostile page on another
127.0.0.x (cross-site) and on another port of 127.0.0.1 (same-site) tries them all
in Chromium against `mirror serve`; plain `datasette` with the plugin is checked
for the same policy and for DNS rebinding."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from mirror import warc
from mirror.plugin._origin import resource_key
from mirror.store.queries import warc_values

from .helpers import SITE_CSS, STYLED, THEME_CSS, chromium, chromium_or_skip, fetch_urls, free_port, mirror_serve, solid_png
from .webserver import HostileServer, article

pytestmark = pytest.mark.hostile


FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")


CROSS_SITE_IMAGE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}


get = functools.partial(httpx.get, timeout=60)  # a machine shared with other test runs is slow at times


post = functools.partial(httpx.post, timeout=60)


NAVIGATION = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """An archive with a styled page (stylesheets, a web font, a CSS image), an article
    with an image, and a screenshot of the article; the site is gone afterwards."""
    if not FONT.is_file():
        pytest.skip(f"{FONT} not found (Debian's fonts-dejavu-core, which chromium depends on)")
    folder = tmp_path_factory.mktemp("origin")
    with HostileServer("127.0.0.1") as site:
        styled = site.add("/styled", STYLED.encode())
        site.add("/css/site.css", SITE_CSS.encode(), content_type="text/css")
        site.add("/css/theme.css", THEME_CSS.encode(), content_type="text/css; charset=utf-8")
        site.add("/fonts/probe.ttf", FONT.read_bytes(), content_type="font/ttf")
        site.add("/img/bg.png", solid_png(8, 8, (255, 248, 220)), content_type="image/png")
        story = site.add("/story", article("探针测试", '<img src="/photo.png" alt="photo">'))
        site.add("/photo.png", solid_png(40, 30, (20, 120, 40)), content_type="image/png")
        db, _ = fetch_urls(folder, [styled, story], retries=0, workers=1)
    writer = warc.CaptureWriter(folder / "archive")
    first, full = writer.write_many(
        [
            warc.Derived(f"urn:screenshot:{story}", "image/png", solid_png(64, 40, (1, 2, 3))),
            warc.Derived(f"urn:screenshot-full:{story}", "image/png", solid_png(64, 80, (1, 2, 3))),
        ]
    )
    writer.close()
    full_columns = {k: v for k, v in warc_values(full, "full_screenshot_").items() if not k.endswith("_file")}
    db["pages"].update(story, warc_values(first, "screenshot_") | full_columns)
    ids = {"styled": db["pages"].get(styled)["id"], "story": db["pages"].get(story)["id"]}
    urls = {"font": site.url("/fonts/probe.ttf"), "photo": site.url("/photo.png"), "css": site.url("/css/site.css")}
    assert {r["url"] for r in db.query("select url from resources where status = 'archived'")} >= set(urls.values())
    with mirror_serve(folder / "archive") as root:
        yield {"root": root, "ids": ids, "urls": urls, "archive": folder / "archive"}


def probe_paths(probed) -> list[tuple[str, str]]:
    """What a hostile page would like to know or read, as (how it loads, path)."""
    ids, urls = probed["ids"], probed["urls"]
    resource = lambda u: "/-/mirror/resource?url=" + quote(u, safe="")  # noqa: E731 - without a key: the page cannot know one
    return [
        ("img", f"/-/mirror/screenshot/{ids['story']}"),  # which pages have screenshots
        ("img", f"/-/mirror/screenshot/{ids['story']}?full=1"),
        ("img", resource(urls["photo"])),  # which images are archived
        ("img", f"/-/mirror/snapshot/{ids['story']}"),
        ("style", resource(urls["css"])),
        ("style", "/-/static/app.css"),
        ("script", "/mirror/pages.json?_shape=array"),
        ("script", "/-/versions.json"),
        ("font", resource(urls["font"])),  # was readable: Access-Control-Allow-Origin: *
        ("no-cors", f"/-/mirror/page/{ids['story']}"),
        ("no-cors", f"/-/mirror/page/{ids['story'] + 1000}"),  # a page that does not exist: the same answer
        ("no-cors", "/mirror/pages.json"),
        ("cors", "/mirror/pages.json?_shape=array"),
        ("cors", "/-/mirror/search?q=" + quote("探针") + "&_format=json"),
    ]


PROBE = """async ([kind, url]) => {
  const event = (element, attach) => new Promise(done => {
    element.onload = () => done("load"); element.onerror = () => done("error"); attach(element); });
  if (kind === "img") return event(new Image(), i => { i.src = url; });
  if (kind === "style") return event(document.createElement("link"), l => { l.rel = "stylesheet"; l.href = url; document.head.append(l); });
  if (kind === "script") return event(document.createElement("script"), s => { s.src = url; document.head.append(s); });
  if (kind === "font") return new FontFace("probe" + Math.random().toString(36).slice(2), `url("${url}")`).load().then(() => "load", () => "error");
  if (kind === "no-cors") return fetch(url, {mode: "no-cors", credentials: "include"}).then(r => "load " + r.type, () => "error");
  return fetch(url, {credentials: "include"}).then(r => r.text().then(t => "load " + t.length), () => "error");
}"""


def _served_key(probed, url: str) -> str:
    """The key the running server put into its snapshot for `url` (its own secret, not ours)."""
    html = get(f"{probed['root']}/-/mirror/snapshot/{probed['ids']['styled']}").text
    marker = "url=" + quote(url, safe="") + "&amp;key="
    return html.split(marker, 1)[1][:32]


@pytest.fixture(scope="module")
def plain_datasette(probed, tmp_path_factory):
    """`datasette archive/mirror.db` as a real process, with the plugin and `allow_hosts` configured."""
    from datasette.version import __version__

    port = free_port()
    settings = {"plugins": {"mirror": {"allow_hosts": ["archive.test", "Other.Test:8001"]}}}
    config = tmp_path_factory.mktemp("config") / "settings.json"
    config.write_text(json.dumps(settings))
    option = "--metadata" if __version__.startswith("0.") else "--config"
    datasette = Path(sys.executable).with_name("datasette")
    server = subprocess.Popen(
        [str(datasette), str(probed["archive"] / "mirror.db"), "--port", str(port), option, str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(root + "/-/versions.json", timeout=2)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("datasette did not start: " + server.stderr.read().decode())
            time.sleep(0.2)
    try:
        yield root, port
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.slow
def test_other_pages_learn_nothing_from_what_they_load(probed):
    """From another 127.0.0.x (cross-site) and another port of 127.0.0.1 (same-site): every
    probe ends as an error, for what exists and what does not; the font is not readable."""
    chromium_or_skip()
    root, paths = probed["root"], probe_paths(probed)
    outcomes = {}
    with HostileServer("127.0.0.2") as cross_site, HostileServer("127.0.0.1") as same_site, chromium() as browser:
        for server in (cross_site, same_site):
            hostile = server.add("/probe", b"<!doctype html><title>hostile</title><p>nothing to see")
            page = browser.new_page()
            page.goto(hostile)
            for kind, path in paths:
                outcomes[(server.host, kind, path)] = page.evaluate(PROBE, [kind, root + path])
            page.close()
    assert set(outcomes.values()) == {"error"}, {k: v for k, v in outcomes.items() if v != "error"}


@pytest.mark.slow
def test_the_probes_would_work_without_the_policy(probed):
    """The same probes from the archive's own origin load: the test above would see a leak."""
    chromium_or_skip()
    with chromium() as browser:
        page = browser.new_page()
        page.goto(probed["root"] + "/-/mirror/search")
        loaded = {path: page.evaluate(PROBE, [kind, probed["root"] + path]) for kind, path in probe_paths(probed)}
    failing = [path for path, outcome in loaded.items() if not outcome.startswith("load")]
    assert failing == [f"/-/mirror/snapshot/{probed['ids']['story']}"]  # an HTML page is no image, from anywhere


@pytest.mark.slow
def test_the_views_work_when_browsed_directly_and_opened_from_elsewhere(probed):
    """Reader (with its image and screenshot), search, table and the styled snapshot (fonts,
    stylesheets and images through keyed URLs) work; a link on another site opens the reader."""
    chromium_or_skip()
    root, ids = probed["root"], probed["ids"]
    with HostileServer("127.0.0.2") as elsewhere, chromium() as browser:
        page = browser.new_page()
        failed: list[str] = []
        page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
        page.goto(f"{root}/-/mirror/page/{ids['story']}")
        assert page.locator("h1").first.inner_text() == "探针测试"  # the article's own heading is this one
        assert "通过分块计算减少显存访问" in page.locator("article.mirror-article").inner_text()
        for img in page.locator("img").all():
            assert img.evaluate("i => i.complete && i.naturalWidth") > 0, img.get_attribute("src")
        page.goto(f"{root}/-/mirror/search?q=" + quote("探针"))
        assert page.locator("li.hit a.reader-link").count() == 1
        page.goto(f"{root}/mirror/pages?_search=" + quote("探针"))  # the table's search: the ranked search page
        assert page.url.startswith(f"{root}/-/mirror/search?q=") and page.locator("li.hit a.reader-link").count() == 1
        page.goto(f"{root}/mirror/pages?_sort=title&_search=" + quote("探针"))  # datasette's own table view, searched
        assert page.locator("table.rows-and-columns a[href*='/-/mirror/page/']").first.inner_text() == "探针测试"
        page.goto(f"{root}/mirror/pages.json?_shape=array")
        assert len(json.loads(page.locator("body").inner_text())) == 2
        page.goto(f"{root}/-/mirror/snapshot/{ids['styled']}")
        page.wait_for_load_state("networkidle")
        page.evaluate("document.fonts.ready.then(() => true)")
        assert page.evaluate("document.fonts.check('16px Probe')"), "the snapshot's web font did not load"
        assert page.locator("nav ul").evaluate("e => getComputedStyle(e).display") == "flex"
        assert page.locator("#card h1").evaluate("e => getComputedStyle(e).color") == "rgb(10, 120, 200)"  # the @import
        link = elsewhere.add("/links", f'<!doctype html><a id="go" href="{root}/-/mirror/page/{ids["story"]}">saved</a>'.encode())
        page.goto(link)
        page.click("#go")
        page.wait_for_url(f"{root}/-/mirror/page/*")
        assert "通过分块计算减少显存访问" in page.locator("article.mirror-article").inner_text()
    assert failed == []


def test_the_answers_to_a_cross_site_request(probed):
    root, ids = probed["root"], probed["ids"]
    refused = [get(root + path, headers=CROSS_SITE_IMAGE) for _, path in probe_paths(probed)]
    assert {(r.status_code, r.text) for r in refused} == {(403, "this mirror archive is not shown inside other web pages\n")}
    assert all(r.headers["cross-origin-resource-policy"] == "same-origin" for r in refused)
    same_site = {**CROSS_SITE_IMAGE, "Sec-Fetch-Site": "same-site"}
    assert get(f"{root}/-/mirror/screenshot/{ids['story']}", headers=same_site).status_code == 403
    framed = {**NAVIGATION, "Sec-Fetch-Dest": "iframe"}  # a frame is not a top-level navigation
    assert get(f"{root}/-/mirror/page/{ids['story']}", headers=framed).status_code == 403
    assert post(f"{root}/-/mirror/search", headers=NAVIGATION).status_code == 403  # a cross-site form
    for headers in ({}, NAVIGATION, {**CROSS_SITE_IMAGE, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
        response = get(f"{root}/-/mirror/screenshot/{ids['story']}", headers=headers)
        assert response.status_code == 200 and response.content.startswith(b"\x89PNG"), headers
        assert response.headers["cross-origin-resource-policy"] == "same-origin"
        assert "access-control-allow-origin" not in response.headers


def test_only_the_snapshots_own_keys_open_archived_files_to_it(probed):
    root, urls = probed["root"], probed["urls"]
    font = urls["font"]
    key = _served_key(probed, urls["css"])
    stylesheet = get(f"{root}/-/mirror/resource?url={quote(urls['css'], safe='')}&key={key}", headers=CROSS_SITE_IMAGE)
    assert stylesheet.status_code == 200 and "@font-face" in stylesheet.text
    assert stylesheet.headers["cross-origin-resource-policy"] == "cross-origin"
    font_key = re.search(re.escape(quote(font, safe="")) + "&key=([0-9a-f]{32})", stylesheet.text)[1]  # its own key
    font_request = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "font", "Origin": "null"}
    keyed = get(f"{root}/-/mirror/resource?url={quote(font, safe='')}&key={font_key}", headers=font_request)
    assert keyed.status_code == 200 and keyed.content == FONT.read_bytes()
    assert keyed.headers["access-control-allow-origin"] == "null"  # the sandboxed snapshot's origin, never *
    assert "Origin" in keyed.headers["vary"]
    for wrong in ("", "&key=", f"&key={key}", "&key=" + "0" * 32, f"&key={resource_key(font)}"):  # another file's key, our own process's
        answer = get(f"{root}/-/mirror/resource?url={quote(font, safe='')}{wrong}", headers=font_request)
        assert answer.status_code == 403 and "access-control-allow-origin" not in answer.headers, wrong
    plain = get(f"{root}/-/mirror/resource?url={quote(font, safe='')}")  # a download by hand: no CORS for anyone
    assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers


def test_plain_datasette_with_the_plugin_refuses_a_rebinding_host(plain_datasette):
    root, port = plain_datasette
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example", ""):
        response = get(root + "/mirror/pages.json", headers={"Host": host})
        assert response.status_code == 400, host
        assert "localhost" in response.text and "allow_hosts" in response.text and "Hostile" not in response.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "archive.test", f"archive.test:{port}", "other.test", f"[::1]:{port}"):
        assert get(root + "/mirror/pages.json", headers={"Host": host}).status_code == 200, host


def test_plain_datasette_with_the_plugin_refuses_cross_site_probes(plain_datasette, probed):
    root, _ = plain_datasette
    for path in ("/mirror/pages.json", "/-/versions.json", "/-/metadata.json", f"/-/mirror/screenshot/{probed['ids']['story']}"):
        assert get(root + path, headers=CROSS_SITE_IMAGE).status_code == 403, path
        assert get(root + path).headers["cross-origin-resource-policy"] == "same-origin", path
    assert get(root + "/mirror/pages", headers=NAVIGATION).status_code == 200


def test_a_bad_allow_hosts_setting_is_a_clear_error(probed, tmp_path):
    from datasette.version import __version__

    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"plugins": {"mirror": {"allow_hosts": {"name": 1}}}}))
    option = "--metadata" if __version__.startswith("0.") else "--config"
    datasette = Path(sys.executable).with_name("datasette")
    result = subprocess.run(
        [str(datasette), str(probed["archive"] / "mirror.db"), option, str(config), "--get", "/"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "allow_hosts setting must be a host name or a list of them" in result.stdout + result.stderr
