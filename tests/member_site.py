"""A site behind a login on 127.0.0.x, for the tests of logged-in archiving: its sign-in form sets
a persistent session cookie, its article is for members only (others get a sign-in wall), its
pictures are on another host that records every Cookie header it is sent. And a way to look for a
secret in every byte an archive folder or an export holds (gzip members and zip entries opened)."""

from __future__ import annotations

import io
import threading
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SESSION = "z_c0"
SECRET = "s3cr3t-session-7f2b9c41d8e6"  # the session cookie's value: it must be in no archive file

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)

MEMBER_TEXT = "会员专享：梯度检查点用重新计算换取显存，只保存少量激活值，在反向传播时再把其余的激活值算出来。"
ARTICLE = """<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>显存优化笔记</title></head>
<body><article><h1>显存优化笔记</h1><p>{text}</p>
<p>第二段：混合精度训练把大部分张量存成半精度，再用损失缩放避免梯度下溢。这样既省显存又能加快计算。</p>
<figure><img src="{pictures}/figure.png" alt="显存曲线"><figcaption>显存随批大小变化</figcaption></figure>
<p id="more"></p></article>{script}</body></html>"""
WALL = """<!DOCTYPE html><html><head><title>登录</title></head><body><h1>登录知乎</h1>
<form action="/login" method="post"><input name="user"><input type="password" name="password"><button>登录</button></form></body></html>"""
LOGIN_FORM = """<!DOCTYPE html><html><head><title>Sign in</title></head><body>
<form action="/login" method="post"><input name="user" value="reader"><input type="password" name="password" value="pw">
<button id="go">Sign in</button></form>{auto}</body></html>"""
# the form sent by the page itself (Firefox is driven by nothing but its command line)
AUTO_SUBMIT = "<script>document.forms[0].submit()</script>"
MORE_SCRIPT = """<script>fetch('/api/more').then(r => r.text()).then(t => { document.getElementById('more').textContent = t; });</script>"""


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True


class Site:
    """One host of the test's web, recording the Cookie header of each request by path."""

    def __init__(self, host: str, route):
        self.cookies: list[tuple[str, str | None]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.cookies.append((self.path, self.headers.get("Cookie")))
                status, headers, body = route(self, "GET", b"")
                self._answer(status, headers, body)

            def do_POST(self):
                site.cookies.append((self.path, self.headers.get("Cookie")))
                length = int(self.headers.get("Content-Length") or 0)
                status, headers, body = route(self, "POST", self.rfile.read(length))
                self._answer(status, headers, body)

            def _answer(self, status, headers, body):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = _Quiet((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def saw_session(self) -> bool:
        return any(cookie and SESSION in cookie for _, cookie in self.cookies)


class MemberSite:
    """The site (127.0.0.2) and its picture host (127.0.0.3)."""

    def __init__(self, script: bool = False):
        self.pictures = Site("127.0.0.3", lambda handler, method, body: (200, [("Content-Type", "image/png")], PNG))
        self.script = script
        self.site = Site("127.0.0.2", self._route)
        self.url = self.site.url
        self.article = f"{self.url}/p/42"

    def __enter__(self) -> MemberSite:
        return self

    def __exit__(self, *exc) -> None:
        self.site.close()
        self.pictures.close()

    def _route(self, handler, method: str, body: bytes):
        path = handler.path.split("?")[0]
        member = f"{SESSION}={SECRET}" in (handler.headers.get("Cookie") or "")
        html = [("Content-Type", "text/html; charset=utf-8")]
        if path == "/login" and method == "POST":
            cookie = f"{SESSION}={SECRET}; Max-Age=31536000; Path=/; HttpOnly"
            return 303, [("Set-Cookie", cookie), ("Location", "/welcome")], b""
        if path == "/login":
            auto = AUTO_SUBMIT if "auto" in handler.path else ""
            return 200, html, LOGIN_FORM.format(auto=auto).encode()
        if path == "/welcome":
            return 200, html, b"<!DOCTYPE html><html><body><p>welcome back</p></body></html>"
        if path == "/p/42":
            if not member:
                return 200, html, WALL.encode()
            page = ARTICLE.format(text=MEMBER_TEXT, pictures=self.pictures.url, script=MORE_SCRIPT if self.script else "")
            return 200, html, page.encode()
        if path == "/api/more":
            return (200, [("Content-Type", "text/plain; charset=utf-8")], "只有会员看得到的补充段落。".encode()) if member else (403, [], b"")
        return 404, html, b"<html><body>not found</body></html>"


def holding(folder: Path, secret: str) -> list[str]:
    """Every file under `folder` whose bytes hold `secret`: as stored, and inside each gzip member
    and zip entry (a WARC file, a WACZ, an EPUB, a WARC in a WACZ)."""
    needle = secret.encode()
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if _holds(path.read_bytes(), needle):
            found.append(str(path.relative_to(folder)))
    return found


def _holds(data: bytes, needle: bytes, depth: int = 0) -> bool:
    if needle in data:
        return True
    if depth > 2:
        return False
    if data[:2] == b"\x1f\x8b":
        return _holds(_gunzip(data), needle, depth + 1)
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return any(_holds(archive.read(name), needle, depth + 1) for name in archive.namelist())
    return False


def _gunzip(data: bytes) -> bytes:
    """Every member of a multi-member gzip file, decompressed and joined."""
    out, rest = [], data
    while rest[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            out.append(inflater.decompress(rest))
        except zlib.error:
            break
        rest = inflater.unused_data
    return b"".join(out)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """`mirror serve` (with `args`) as a real process on a free port: its root URL and its pid."""

    def __init__(self, archive: Path, *args: str):
        import subprocess
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mirror", "serve", "--port", str(self.port), "--archive", str(archive), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def __enter__(self) -> Served:
        import socket
        import time

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        self.process.kill()
        raise AssertionError("mirror serve did not start: " + self.process.stderr.read().decode())

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)

    def rss_kb(self) -> int:
        """The server's resident memory now (VmRSS, kB)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


def noisy_png(width: int = 48, height: int = 48, seed: int = 7) -> bytes:
    """A real PNG of pseudo-random pixels: a few KB, as an article's picture is (not a spacer)."""
    import random
    import struct

    rng = random.Random(seed)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(width * 3)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


# Browsers the tests start talk to 127.0.0.x alone: anything else they would ask for (updates,
# telemetry, first-run pages) goes to a proxy address where nothing listens (loopback is never proxied).
DEAD_PROXY = "http://127.0.0.1:9"
CHROMIUM_QUIET = [
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<local>;127.0.0.0/8",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
]
FIREFOX_PREFS = """user_pref("network.proxy.type", 1);
user_pref("network.proxy.http", "127.0.0.1");
user_pref("network.proxy.http_port", 9);
user_pref("network.proxy.ssl", "127.0.0.1");
user_pref("network.proxy.ssl_port", 9);
user_pref("network.proxy.no_proxies_on", "127.0.0.0/8, localhost");
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("network.dns.disablePrefetch", true);
user_pref("network.prefetch-next", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("datareporting.healthreport.uploadEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("app.update.auto", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("browser.safebrowsing.downloads.enabled", false);
user_pref("extensions.update.enabled", false);
user_pref("extensions.getAddons.cache.enabled", false);
"""


def chromium_login(profile: str, site_url: str, password_store: str = "basic") -> None:
    """Headless chromium with its own profile folder signs in through the site's form, then closes
    (Chromium writes its cookies to disk when it closes). `password_store`: where it keeps the key
    to its cookies (basic: none, the fixed key; gnome-libsecret: the Secret Service)."""
    from playwright.sync_api import sync_playwright

    from .helpers import CHROMIUM

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=[*CHROMIUM_QUIET, f"--password-store={password_store}"],
            ignore_default_args=["--password-store=basic"],
            proxy={"server": DEAD_PROXY, "bypass": "127.0.0.0/8"},
        )
        page = context.new_page()
        page.goto(f"{site_url}/login")
        page.click("#go")
        page.wait_for_url("**/welcome")
        context.close()
