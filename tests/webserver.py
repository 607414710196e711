"""A small hostile web on 127.0.0.x for the fetch tests.

Routes are plain functions of the request handler. The server records what it
saw (paths, Cookie headers, concurrency) so tests can assert on it, and every
slow route is bounded in time so that nothing outlives the test.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ARTICLE = """<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>{title}</title></head>
<body><article><h1>{title}</h1><p>FlashAttention 通过分块计算减少显存访问。{body}</p>
<p>第二段：在线 softmax 让注意力计算可以逐块完成，避免把整个注意力矩阵写回显存。</p></article></body></html>"""


def article(title: str, body: str = "") -> bytes:
    return ARTICLE.format(title=title, body=body).encode("utf-8")


PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)
GBK_ARTICLE = """<html><head><title>流水线并行</title></head><body><article><h1>流水线并行</h1>
<p>流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。为了减少设备空闲，微批次被依次送入流水线。</p>
<p>气泡是流水线并行的主要开销：设备在等待上游结果时无事可做。交错调度可以进一步压缩气泡。</p></article></body></html>"""


def make_pdf(title: str, lines: list[str]) -> bytes:
    """A small valid PDF with one page of Helvetica text and an Info title."""
    stream = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) /Author (Tri Dao) >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


_BOMB: list[bytes] = []


def gzip_bomb_pieces() -> Iterator[bytes]:
    """~300 KB of gzip that decodes to 300 MB of zeros, a piece for each MB, made as they are
    read the first time (a second of CPU in all: a route that made it all before its first byte
    went past a client's timeout on a busy machine)."""
    if _BOMB:
        yield from _BOMB
        return
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    made = []
    for _ in range(300):
        made.append(compressor.compress(block))
        yield made[-1]
    made.append(compressor.flush())
    yield made[-1]
    _BOMB[:] = made


def gzip_bomb() -> bytes:
    return b"".join(gzip_bomb_pieces())


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.hits: dict[str, int] = defaultdict(int)
        self.cookies: dict[str, list[str | None]] = defaultdict(list)
        self.headers: dict[str, list[dict[str, str]]] = defaultdict(list)
        self.in_flight = 0
        self.max_in_flight = 0
        self.starts: list[tuple[str, float]] = []
        self.finishes: list[tuple[str, float]] = []
        self.gone: set[str] = set()  # paths that now answer 404
        self.pages: dict[str, tuple[int, dict[str, str], bytes]] = {}  # fixtures a test adds
        self.fallback: tuple[int, dict[str, str], bytes] | None = None  # what any other path gets (a soft 404 host)
        self.answer_first = 0  # /held/ pages answered at once; the later ones wait for `release`
        self.release = threading.Event()
        self.held = 0

    def enter(self, path: str) -> int:
        with self.lock:
            self.hits[path] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.starts.append((path, time.monotonic()))
            return self.hits[path]

    def leave(self, path: str) -> None:
        with self.lock:
            self.in_flight -= 1
            self.finishes.append((path, time.monotonic()))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HostileServer

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        rec = self.server.recorder
        if self.path.startswith("http://"):  # a proxy request: absolute URI
            proxied = rec.pages.get(urlsplit(self.path).path)
            if proxied:
                status, headers, body = proxied
                return self.send(status, body, headers, content_type=headers.get("Content-Type", "text/html"))
            return self.send(200, article("via proxy", self.path))
        parts = urlsplit(self.path)
        path = parts.path
        hit = rec.enter(path)
        rec.cookies[path].append(self.headers.get("Cookie"))
        rec.headers[path].append(dict(self.headers.items()))
        try:
            if path in rec.gone:
                return self.send(404, b"gone now")
            if path in rec.pages:
                status, headers, body = rec.pages[path]
                return self.send(status, body, headers, content_type=headers.get("Content-Type", "text/html"))
            route = ROUTES.get(path) or next((f for p, f in PREFIX_ROUTES if path.startswith(p)), None)
            if route is None and rec.fallback is not None:
                status, headers, body = rec.fallback
                return self.send(status, body, headers, content_type=headers.get("Content-Type", "text/html"))
            if route is None:
                return self.send(404, b"<html><title>404</title>not here</html>")
            route(self, hit, parts)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            rec.leave(path)

    def send(self, status: int, body: bytes, headers: dict[str, str] | None = None, content_type: str | None = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        headers = {"Content-Type": content_type, **(headers or {})}
        headers = {k: v for k, v in headers.items() if v is not None}
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _article(h, hit, parts):
    h.send(200, article(f"文章 {parts.path.rsplit('/', 1)[-1]}"))


def _slow(h, hit, parts):
    seconds = float(parse_qs(parts.query).get("s", ["0.3"])[0])
    time.sleep(min(seconds, 10))
    h.send(200, article(f"slow {parts.path}"))


def _held(h, hit, parts):
    """The first `answer_first` of these pages answer at once, the others once the test sets
    `release` (at most a minute): a run stopped after n pages has n pages done, however fast the
    machine is and however late the stop lands."""
    rec = h.server.recorder
    with rec.lock:
        rec.held += 1
        waits = rec.held > rec.answer_first
    if waits:
        rec.release.wait(60)
    h.send(200, article(f"held {parts.path}"))


def _flaky(h, hit, parts):
    if hit <= 2:
        return h.send(503, b"busy", {"Retry-After": "0"})
    h.send(200, article("flaky but fine"))


def _retry_after(h, hit, parts):
    if hit == 1:
        return h.send(429, b"slow down", {"Retry-After": "1"})
    h.send(200, article("after waiting"))


def _always_503(h, hit, parts):
    h.send(503, b"down")


def _gone(h, hit, parts):
    h.send(410, b"gone")


def _redirect(h, hit, parts):
    n = int(parts.path.rsplit("/", 1)[-1])
    target = "/article/redirected" if n <= 1 else f"/redirect/{n - 1}"
    h.send(302, b"", {"Location": target})


def _loop(h, hit, parts):
    h.send(301, b"", {"Location": "/loop/b" if parts.path.endswith("/a") else "/loop/a"})


def _trickle(h, hit, parts):
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "1000")
    h.end_headers()
    for _ in range(20):  # one byte a second, bounded: at most ~20 s
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(1)


def _never(h, hit, parts):
    """Accept, read the request, never answer (for at most 20 s)."""
    time.sleep(20)
    h.close_connection = True


def _reset(h, hit, parts):
    """Tear the connection down with a TCP reset before any answer."""
    import socket
    import struct

    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.connection.close()
    h.close_connection = True


def _truncated(h, hit, parts):
    """Promise 5000 bytes of HTML, send 1000, hang up."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Content-Length", "5000")
    h.end_headers()
    h.wfile.write(article("truncated")[:1000])
    h.wfile.flush()
    h.close_connection = True


def _empty(h, hit, parts):
    h.send(200, b"")


def _json(h, hit, parts):
    h.send(200, json.dumps({"data": list(range(50))}).encode(), content_type="application/json")


def _png(h, hit, parts):
    h.send(200, PNG, content_type="image/png")


def _gbk_as_utf8(h, hit, parts):
    h.send(200, GBK_ARTICLE.encode("gbk"), content_type="text/html; charset=utf-8")


def _pdf(h, hit, parts):
    lines = [f"Line {i}: pipeline parallelism splits the layers of a model across devices." for i in range(6)]
    h.send(200, make_pdf("Pipeline parallelism", lines), content_type="application/pdf")


def _big(h, hit, parts):
    chunk = b"<p>" + b"a" * 1021
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Connection", "close")  # close-delimited: no Content-Length to trust
    h.end_headers()
    for _ in range(5 * 1024):  # 5 MB
        h.wfile.write(chunk)
    h.close_connection = True


def _big_declared(h, hit, parts):
    h.send(200, b"", {"Content-Length": str(10**10)})


def _bomb(h, hit, parts, codings=("gzip",)):
    """The gzip bomb, close-delimited, written as it is made: its first bytes go out at once."""
    h.send_response(200)
    h.send_header("Content-Type", "text/css" if parts.path.endswith(".css") else "text/html")
    for coding in codings:
        h.send_header("Content-Encoding", coding)
    h.send_header("Connection", "close")
    h.end_headers()
    for piece in gzip_bomb_pieces():
        h.wfile.write(piece)
    h.close_connection = True


def _bomb_twice_labelled(h, hit, parts):
    """One gzip layer, two `Content-Encoding: gzip` fields: read back, warcio decodes it once."""
    _bomb(h, hit, parts, codings=("gzip", "gzip"))


def _utf8_headers(h, hit, parts):
    """Header values and a status text in raw UTF-8, as servers send them (http.server writes Latin-1)."""
    raw = lambda text: text.encode().decode("latin-1")  # noqa: E731
    body = article("头部")
    h.send_response(200, raw("Café"))
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("X-Note", raw("a=é;b é"))
    h.send_header("Link", raw("<https://cdn.example/字体.woff2>; rel=preload"))
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def _gzip_ok(h, hit, parts):
    h.send(200, gzip.compress(article("压缩的文章")), {"Content-Encoding": "gzip"})


def _cookies(h, hit, parts):
    h.send(200, article("cookies", h.headers.get("Cookie") or "none"))


def _zhihu_403(h, hit, parts):
    h.send(403, "<html><head><title>安全验证 - 知乎</title></head><body>系统监测到您的网络环境存在异常</body></html>".encode())


def _weixin_verify(h, hit, parts):
    h.send(
        200,
        '<html><body><div class="weui-msg"><p>环境异常</p><p>当前环境异常，完成验证后即可继续访问。</p><a>去验证</a></div></body></html>'.encode(),
    )


def _cloudflare(h, hit, parts):
    h.send(503, b"<html><head><title>Just a moment...</title></head><body>Checking your browser</body></html>", {"Server": "cloudflare"})


def _login_wall(h, hit, parts):
    h.send(
        200,
        b'<html><head><title>Sign in</title></head><body><form action="/session"><input name="user">'
        b'<input type="password" name="pw"><button>Sign in</button></form></body></html>',
    )


def _etag(h, hit, parts):
    if h.headers.get("If-None-Match") == '"v1"':
        return h.send(304, b"", {"ETag": '"v1"'})
    h.send(200, article("versioned"), {"ETag": '"v1"', "Last-Modified": "Wed, 01 Jan 2025 00:00:00 GMT"})


def _glued(h, hit, parts):
    if parts.path == "/openai/triton":
        return h.send(200, article("triton"))
    h.send(404, b"no such repo")


def _wayback_api(h, hit, parts):
    url = parse_qs(parts.query)["url"][0]
    host = h.headers["Host"]
    if "nosnapshot" in url:
        return h.send(200, json.dumps({"archived_snapshots": {}}).encode(), content_type="application/json")
    snapshot = {"available": True, "status": "200", "timestamp": "20200101000000", "url": f"http://{host}/web/20200101000000/{url}"}
    h.send(200, json.dumps({"url": url, "archived_snapshots": {"closest": snapshot}}).encode(), content_type="application/json")


def _wayback_snapshot(h, hit, parts):
    if "id_/" not in parts.path:
        return h.send(200, b"<html>toolbar wrapped copy</html>")
    h.send(200, article("from the wayback machine"))


ROUTES = {
    "/never": _never,
    "/reset": _reset,
    "/truncated": _truncated,
    "/empty": _empty,
    "/json": _json,
    "/png": _png,
    "/gbk-as-utf8": _gbk_as_utf8,
    "/pdf": _pdf,
    "/flaky": _flaky,
    "/retry-after": _retry_after,
    "/always-503": _always_503,
    "/gone": _gone,
    "/trickle": _trickle,
    "/big": _big,
    "/big-declared": _big_declared,
    "/bomb": _bomb,
    "/gzip": _gzip_ok,
    "/bomb-twice": _bomb_twice_labelled,
    "/bomb-twice.css": _bomb_twice_labelled,
    "/utf8-headers": _utf8_headers,
    "/cookies": _cookies,
    "/zhihu-403": _zhihu_403,
    "/weixin-verify": _weixin_verify,
    "/cloudflare": _cloudflare,
    "/login": _login_wall,
    "/etag": _etag,
    "/openai/tritonPython": _glued,
    "/openai/triton": _glued,
    "/wayback/available": _wayback_api,
}
PREFIX_ROUTES = [
    ("/article/", _article),
    ("/slow/", _slow),
    ("/held/", _held),
    ("/redirect/", _redirect),
    ("/loop/", _loop),
    ("/web/", _wayback_snapshot),
]


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", lifetime: float = 600):
        super().__init__((host, 0), Handler)
        self.recorder = Recorder()
        self.host = host
        self.port = self.server_address[1]
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        # the server stops by itself even if a test forgets it
        self._watchdog = threading.Timer(lifetime, self.shutdown)
        self._watchdog.daemon = True

    def handle_error(self, request, client_address) -> None:  # clients hanging up is expected here
        pass

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def add(self, path: str, body: bytes, content_type: str | None = "text/html", status: int = 200, **headers: str) -> str:
        """Serve `body` at `path` (Content-Type None sends no such header); returns its URL."""
        self.recorder.pages[path] = (status, {"Content-Type": content_type, **headers}, body)
        return self.url(path)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(self, *exc) -> None:
        self._watchdog.cancel()
        self.shutdown()
        self.server_close()
