"""The browser inside the fetch: a page whose capture needs JavaScript is rendered from that
capture as soon as it is extracted, while the other pages are fetched; every request the browser
makes goes through the run's gates; a render never replaces a cleaner article; a check keeps a
rendered article against the page's shell. Real chromium, servers on 127.0.0.x."""

from __future__ import annotations

import json
import socket
import time

import pytest
import sqlite_utils

from .browsersite import APP_PARAGRAPHS, app_page, serve_app
from .helpers import CHROMIUM, assert_spaced, chromium_or_skip, fetch, run_mirror
from .webserver import PNG

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _chromium():
    chromium_or_skip()


def fetch_rendering(tmp_path, urls: list[str], **options):
    """`fetch` with the browser on (auto: the pages whose capture needs it), two tabs."""
    return fetch(tmp_path, urls, **{**dict(timeout=15, browser="auto", chromium=CHROMIUM, browser_tabs=2), **options})


def static_page(title: str) -> bytes:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head><body><article><h1>{title}</h1>'
        + "".join(f"<p>{p}</p>" for p in APP_PARAGRAPHS)
        + '<img src="/static-figure.png" alt="a figure"></article></body></html>'
    ).encode()


GB_PAGE = """<html><head><meta charset="gb2312"><title>流水线并行的气泡</title></head><body>
<article><h1>流水线并行的气泡</h1>
<p>流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。为了减少设备空闲，微批次被依次送入流水线。</p>
<p>气泡是流水线并行的主要开销：设备在等待上游结果时无事可做。交错调度可以进一步压缩气泡。BROKEN</p>
</article><div id="app"></div>{script}</body></html>"""


def gb_bytes(script: str) -> bytes:
    body = GB_PAGE.format(script=script).encode("gb2312")
    return body.replace(b"BROKEN", b"\xff\xfe")  # a byte sequence that is not GB2312: the page must still read as Chinese


def check(tmp_path, *args: str) -> dict:
    result = run_mirror(
        "check",
        "--older-than",
        "0",
        "--delay",
        "0",
        "--retries",
        "0",
        "--json",
        "--chromium",
        CHROMIUM,
        *args,
        cwd=tmp_path,
        env={"MIRROR_BROWSER": "auto"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_page_and_image_is_requested_once_in_a_run_that_renders(tmp_path, web):
    web.add("/static-figure.png", PNG, content_type="image/png")
    apps = [serve_app(web, "first-app", "Rendered by JavaScript"), serve_app(web, "second-app", "Also rendered")]
    static = web.add("/static", static_page("Server rendered"))
    db, summary = fetch_rendering(tmp_path, [*apps, static])
    for url in apps:
        row = db["pages"].get(url)
        assert (row["status"], row["capture"], row["render_gain"]) == ("archived", "browser", 1), row["render_note"]
    assert db["pages"].get(static)["rendered_at"] is None  # an article: no evidence that a browser would help
    hits = web.recorder.hits
    assert hits["/first-app"] == hits["/second-app"] == hits["/static"] == 1  # the renders are made from the captures
    assert hits["/api/first-app.json"] == hits["/api/second-app.json"] == 1
    assert hits["/app.js"] == 1 and hits["/figure.png"] == 1  # shared by both renders: asked for once a run
    assert hits["/static-figure.png"] == 1
    figure = web.url("/figure.png")
    assert {r["page_url"] for r in db.query("select page_url from resources where url = ? and status = 'archived'", [figure])} <= set(apps)
    assert summary.rendered == {"archived from browser": 2}


def test_the_browser_waits_at_the_same_per_host_gate(tmp_path, web):
    delay = 0.4
    web.add("/static-figure.png", PNG, content_type="image/png")
    urls = [serve_app(web, "app", "Rendered by JavaScript")] + [web.add(f"/article-{i}", static_page(f"Article {i}")) for i in range(4)]
    db, _ = fetch_rendering(tmp_path, urls, delay=delay, per_host=2)
    assert db["pages"].get(urls[0])["capture"] == "browser"
    starts = [t for _, t in web.recorder.starts]
    assert len(starts) >= 9  # the pages, the images, and the render's script, API and figure
    assert_spaced(starts, delay)


def test_a_render_ends_while_the_http_pass_goes_on(tmp_path, web, web2):
    """The first page's render ends before the last of the other host's pages is fetched: that
    page answers only once the render has ended (a run that rendered after its HTTP pass would
    wait a minute for it, and render after it)."""
    app = serve_app(web, "app", "Rendered by JavaScript")
    web2.recorder.answer_first = 13  # the 14th waits for `release`
    others = [web2.url(f"/held/{i}") for i in range(14)]
    times: dict[str, float] = {}

    def rendered(url, outcome, summary):
        times.setdefault("rendered", time.monotonic())
        web2.recorder.release.set()

    try:
        db, _ = fetch_rendering(tmp_path, [app, *others], delay=0.2, per_host=1, images=False, on_render=rendered)
    finally:
        web2.recorder.release.set()
    assert db["pages"].get(app)["capture"] == "browser"
    last_answer = max(t for path, t in web2.recorder.finishes if path.startswith("/held/"))
    assert times["rendered"] < last_answer


def test_a_gb2312_page_with_broken_bytes_is_rendered_as_mirror_decodes_it(tmp_path, web):
    """The render is made from the capture decoded as the extraction decodes it: its article keeps
    the Chinese the HTTP article has, not chromium's own reading of the bytes."""
    more = "".join(f"<p>{p}</p>" for p in APP_PARAGRAPHS)
    url = web.add(
        "/gb", gb_bytes(f"<script>document.getElementById('app').innerHTML = {json.dumps(more)};</script>"), content_type="text/html"
    )  # no charset in the header: the page's own <meta> says gb2312
    db, _ = fetch_rendering(tmp_path, [url], browser="always")
    row = db["pages"].get(url)
    assert row["capture"] == "browser", row["render_note"]  # the script's paragraphs make it the better article
    assert row["title"] == "流水线并行的气泡" and "交错调度可以进一步压缩气泡" in row["text"]
    assert row["text"].count("\ufffd") <= 2 and "FlashAttention" in row["text"]


def test_a_render_that_decodes_worse_never_replaces_a_clean_article(tmp_path, web):
    """A script that adds text read with the wrong decoder (GBK bytes read as Big5) makes a render
    with more words but rarer characters: the HTTP article, cleanly decoded, stays the page's."""
    web.add("/more.bin", ("显存优化与注意力计算的分块策略。" * 40).encode("gbk"), content_type="application/octet-stream")
    script = """<script>fetch('/more.bin').then(r => r.arrayBuffer()).then(b => {
      const text = new TextDecoder('big5').decode(b);
      for (let i = 0; i < 6; i++) { const p = document.createElement('p'); p.textContent = text; document.getElementById('app').appendChild(p); }
    });</script>"""
    url = web.add("/gb-worse", gb_bytes(script), content_type="text/html")
    db, _ = fetch_rendering(tmp_path, [url], browser="always")
    row = db["pages"].get(url)
    assert (row["capture"], row["render_gain"]) == ("http", 0), row["render_note"]
    assert "decodes worse" in row["render_note"]
    assert row["title"] == "流水线并行的气泡" and "交错调度可以进一步压缩气泡" in row["text"]


def test_a_page_the_browser_could_not_improve_is_not_rendered_again(tmp_path, web):
    shell = (
        '<!DOCTYPE html><html><head><title>Dashboard</title></head><body><div id="root"></div>'
        "<noscript>You need to enable JavaScript to run this app.</noscript><script>window.ready = {n};</script></body></html>"
    )
    url = web.add("/dashboard", shell.format(n=1).encode())
    db, first = fetch_rendering(tmp_path, [url])
    row = db["pages"].get(url)
    assert (row["capture"], row["render_gain"]) == ("http", 0) and row["rendered_at"], row["render_note"]
    assert first.rendered == {"kept http": 1}
    web.add("/dashboard", shell.format(n=2).encode())  # new bytes, the same text
    _, again = fetch_rendering(tmp_path, [url], refresh=True)
    assert again.done == 1 and not again.rendered


def test_a_check_keeps_a_rendered_article_against_its_shell(tmp_path, web):
    url = serve_app(web, "notes", "Rendered by JavaScript")
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text(url + "\n", encoding="utf-8")
    fetched = run_mirror(
        "fetch", "--delay", "0", "--retries", "0", "--chromium", CHROMIUM, cwd=tmp_path, env={"MIRROR_BROWSER": "auto"}, timeout=300
    )  # the default a user gets
    assert fetched.returncode == 0, fetched.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    saved = db["pages"].get(url)
    assert saved["capture"] == "browser" and "Online softmax" in saved["text"]
    assert [v["state"] for v in db.query("select state from versions")] == ["first"]  # one version, not a shell and then a render

    assert check(tmp_path, "--browser", "never")["states"] == {"same": 1}  # the same shell: nothing seen changed
    web.add("/notes", app_page("/api/notes.json").replace(b'<div id="root"></div>', b'<div id="root"></div><p>Loading the article, one moment.</p>'))
    report = check(tmp_path, "--browser", "never")
    assert report["states"] == {"needs_browser": 1}, report  # the shell changed: plain HTTP cannot tell more
    assert db["pages"].get(url)["text"] == saved["text"]  # the shell never replaced the rendered article

    assert check(tmp_path)["states"] == {"same": 1}  # rendered again: the same article
    serve_app(web, "notes", "Rendered by JavaScript", [*APP_PARAGRAPHS, "A paragraph added since the first capture, with new words."])
    web.add("/notes", app_page("/api/notes.json"))
    assert check(tmp_path)["states"] == {"changed": 1}
    row = db["pages"].get(url)
    assert row["capture"] == "browser" and "A paragraph added since" in row["text"]


@pytest.mark.hostile
def test_a_request_that_fails_fails_at_once(tmp_path, web):
    """A rendered page's request that the run's client cannot make (a closed port) fails then,
    not at the render's deadline."""
    from .helpers import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    url = web.add(
        "/page",
        f"""<html><body><div id=app></div><p>a page</p>
        <script>fetch('http://127.0.0.1:{closed}/api').catch(() => {{ document.body.dataset.failed = 'yes' }})</script></body></html>""".encode(),
    )
    started = time.monotonic()
    db, _ = fetch(tmp_path, [url], browser="always", chromium=CHROMIUM, images=False, timeout=20, concurrency=1, resource_timeout=5)
    seconds = time.monotonic() - started
    row = db["pages"].get(url)
    assert row["rendered_at"] is not None and row["render_error"] is None and seconds < 15, (row["render_note"], seconds)
