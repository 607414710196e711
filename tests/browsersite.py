"""A loopback site of pages that need a browser, for the browser tests: a single-page app, a
cookie challenge, lazy images, a page that never settles, dialogs and pop-ups, a download, an
application shell, a server-rendered article, a busy script. It counts the requests it answers
and keeps their headers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .webserver import PNG

TIMEOUT = 12.0  # --timeout for the renders; a page that never settles is cut here

PARAGRAPHS = [
    "FlashAttention computes exact attention in tiles that fit in on-chip memory, so the full attention matrix is never written out.",
    "在线 softmax 让注意力计算可以逐块完成，避免把整个注意力矩阵写回显存，从而显著降低显存占用并提升速度。",
    "The backward pass recomputes the tiles instead of storing them, trading a little compute for a large saving in memory traffic.",
]
ARTICLE_HTML = "<article><h1>{title}</h1>" + "".join(f"<p>{p}</p>" for p in PARAGRAPHS) + "</article>"

SPA = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>App</title></head><body>
<div id="root"></div>
<script>
fetch('/api/article.json').then(r => r.json()).then(a => {
  const root = document.getElementById('root');
  const article = document.createElement('article');
  const h = document.createElement('h1'); h.textContent = a.title; article.appendChild(h);
  for (const text of a.paragraphs) { const p = document.createElement('p'); p.textContent = text; article.appendChild(p); }
  root.appendChild(article);
  document.title = a.title;
});
</script></body></html>"""

CHALLENGE = b"""<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>
<p>Checking your browser before accessing the site.</p>
<script>
document.cookie = "mirror_clearance=" + (6 * 7) + "; path=/";
setTimeout(function () { location.reload(); }, 300);
</script></body></html>"""

LAZY = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Lazy images</title></head><body>"""
    + ARTICLE_HTML.format(title="Lazy images")
    + "".join(
        f'<div style="height:1500px"></div><p>Figure {i}</p><img class="lazy" data-src="/img/{i}.png" width="200" height="100" alt="figure {i}">'
        for i in range(3)
    )
    + """<script>
const seen = new IntersectionObserver(entries => { for (const e of entries) if (e.isIntersecting) { e.target.src = e.target.dataset.src;\
 seen.unobserve(e.target); } });
document.querySelectorAll('img.lazy').forEach(img => seen.observe(img));
</script></body></html>"""
).encode()

NEVER_SETTLES = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Never settles</title></head><body>"""
    + ARTICLE_HTML.format(title="Never settles")
    + """<div id="feed"></div><script>
fetch('/hang');
setInterval(() => { const d = document.createElement('div'); d.textContent = 'tick'; document.getElementById('feed').appendChild(d); }, 100);
</script></body></html>"""
).encode()

DIALOGS = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Dialogs</title></head><body>"""
    + ARTICLE_HTML.format(title="Dialogs")
    + """<script>
alert('hello'); confirm('sure?'); window.open('/popup', '_blank'); window.open('/popup?2');
document.addEventListener('DOMContentLoaded', () => { document.body.dataset.after = 'dialogs'; });
</script></body></html>"""
).encode()

DOWNLOAD = b"""<!DOCTYPE html><html><head><title>Your file</title></head><body><p>Your download starts.</p>
<script>location.href = '/file.bin';</script></body></html>"""

SHELL = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Shell</title></head><body>
<article><h1>Notes on attention</h1><p>This site collects reading notes about efficient attention kernels, memory hierarchies
and the tricks that make long contexts affordable on a single accelerator. The full article below is rendered by the
browser from the page's own script.</p><div id="app"></div></article>
<script>
const app = document.getElementById('app');
for (const text of """
    + json.dumps(PARAGRAPHS * 3)
    + """) { const p = document.createElement('p'); p.textContent = text; app.appendChild(p); }
</script></body></html>"""
).encode()

STATIC = (
    """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Server rendered</title></head><body>"""
    + ARTICLE_HTML.format(title="Server rendered")
    + "</body></html>"
).encode()


class Site(ThreadingHTTPServer):
    """The loopback site: JavaScript pages, a cookie challenge, a hanging request."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hits: dict[str, int] = {}
        self.headers: dict[str, list[dict[str, str]]] = {}
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Site

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        with self.server.lock:
            self.server.hits[path] = self.server.hits.get(path, 0) + 1
            self.server.headers.setdefault(path, []).append(dict(self.headers.items()))
        try:
            self.route(path)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self, path: str) -> None:
        if path == "/spa":
            return self.send(200, SPA)
        if path == "/api/article.json":
            body = json.dumps({"title": "Rendered by JavaScript", "paragraphs": PARAGRAPHS}).encode()
            return self.send(200, body, "application/json")
        if path == "/members":
            return self.send(200, SPA.replace(b"/api/article.json", b"/api/members.json"))
        if path == "/api/members.json":
            if "session=s3cret" not in (self.headers.get("Cookie") or ""):
                return self.send(403, b'{"error": "log in"}', "application/json")
            body = json.dumps({"title": "Members only", "paragraphs": PARAGRAPHS}).encode()
            return self.send(200, body, "application/json")
        if path == "/challenge":
            if "mirror_clearance=42" in (self.headers.get("Cookie") or ""):
                return self.send(200, STATIC.replace(b"Server rendered", b"Behind the challenge"))
            return self.send(503, CHALLENGE, extra={"Server": "cloudflare"})
        if path == "/lazy":
            return self.send(200, LAZY)
        if path.startswith("/img/"):
            return self.send(200, PNG, "image/png")
        if path == "/never-settles":
            return self.send(200, NEVER_SETTLES)
        if path == "/hang":
            time.sleep(60)  # answers long after the render's bound
            return self.send(200, b"late")
        if path == "/dialogs":
            return self.send(200, DIALOGS)
        if path == "/popup":
            return self.send(200, b"<html><title>pop-up</title>a pop-up</html>")
        if path == "/download":
            return self.send(200, DOWNLOAD)
        if path == "/file.bin":
            return self.send(200, b"\0" * 4096, "application/octet-stream", {"Content-Disposition": 'attachment; filename="file.bin"'})
        if path == "/busy":  # the page's script never returns: the renderer stops answering
            return self.send(200, STATIC.replace(b"</body>", b"<script>setTimeout(() => { for (;;) {} }, 50)</script></body>"))
        if path == "/static":
            return self.send(200, STATIC)
        if path == "/shell":
            return self.send(200, SHELL)
        self.send(404, b"not here")

    def send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


PAGES = ["/spa", "/challenge", "/lazy", "/never-settles", "/dialogs", "/download", "/static", "/members", "/shell"]


# An application on the tests' own webserver (tests/webserver.py), for the runs that render beside
# the fetch: its shell, its script (shared by the app's pages) and the API it asks.

APP_PARAGRAPHS = [  # the article the application's API serves
    "FlashAttention computes exact attention in tiles that fit in on-chip memory, so the full attention matrix is never written out.",
    "The backward pass recomputes the tiles instead of storing them, trading a little compute for a large saving in memory traffic.",
    "Online softmax lets the normalisation be carried from tile to tile, which is what makes the tiled computation exact.",
]


# an application shell: an empty root, a script (shared by the app's pages) that asks an API for the article
APP_JS = b"""fetch(document.body.dataset.api).then(r => r.json()).then(a => {
  const root = document.getElementById('root');
  const article = document.createElement('article');
  const h = document.createElement('h1'); h.textContent = a.title; article.appendChild(h);
  for (const text of a.paragraphs) { const p = document.createElement('p'); p.textContent = text; article.appendChild(p); }
  const img = document.createElement('img'); img.src = '/figure.png'; img.alt = 'figure'; article.appendChild(img);
  root.appendChild(article); document.title = a.title;
});"""


def app_page(api: str) -> bytes:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Loading</title></head><body data-api="{api}">'
        '<div id="root"></div><noscript>Please enable JavaScript to read this article.</noscript>'
        '<script src="/app.js"></script></body></html>'
    ).encode()


def serve_app(web, name: str, title: str, paragraphs: list[str] = APP_PARAGRAPHS) -> str:
    web.add("/app.js", APP_JS, content_type="application/javascript")
    web.add("/figure.png", PNG, content_type="image/png")
    web.add(f"/api/{name}.json", json.dumps({"title": title, "paragraphs": paragraphs}).encode(), content_type="application/json")
    return web.add(f"/{name}", app_page(f"/api/{name}.json"))
