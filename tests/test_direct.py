"""Resources sent straight to httpcore's pool (mirror.http.direct) are captured exactly as httpx would.

Each test runs the same requests through both paths against a real server: the direct one (no
cookies, no proxy) and httpx's (a client holding a cookie jar), and compares what reached the
WARC files and the outcome.
"""

from __future__ import annotations

import asyncio
import gzip
from http.cookiejar import CookieJar

import pytest
from warcio.archiveiterator import ArchiveIterator

from mirror._types import Reason
from mirror.http import Budget, Client, Reach
from mirror.http import direct as _direct
from mirror.warc import CaptureWriter

from .webserver import PNG


def _records(folder) -> list:
    """(type, target, request or response headers without Date, payload) of every record."""
    out = []
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                headers = [(k.lower(), v) for k, v in record.http_headers.headers if k.lower() != "date"]
                out.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"),
                            record.http_headers.statusline, headers, record.content_stream().read()))
    return out


def _fetch(tmp_path, name: str, urls: list[str], cookies: CookieJar | None, monkeypatch, headers: dict | None = None) -> tuple[list, list, int]:
    """Every URL as a page resource with a fresh client; (exchanges, records, direct sends)."""
    sent = []
    real = _direct.send

    async def counting(*args, **kwargs):
        sent.append(args[1])
        return await real(*args, **kwargs)

    monkeypatch.setattr(_direct, "send", counting)

    async def go():
        writer = CaptureWriter(tmp_path / name)
        client = Client(writer, concurrency=4, per_host=2, delay=0, timeout=5, max_bytes=1_000_000, max_redirects=3,
                        headers={"User-Agent": "mirror-test", "Accept-Encoding": "gzip, deflate", **(headers or {})}, cookies=cookies)
        budget = Budget(timeout=3, retries=0, concurrency=4)
        try:
            return [await client.get(url, budget=budget, reach=Reach.LOOPBACK) for url in urls]
        finally:
            await client.aclose()
            writer.close()

    exchanges = asyncio.run(go())
    monkeypatch.setattr(_direct, "send", real)
    return exchanges, _records(tmp_path / name), len(sent)


def _outcome(exchange) -> tuple:
    return (exchange.url, exchange.final_url, exchange.status, exchange.error, exchange.message, exchange.content_type,
            exchange.etag, exchange.redirects, exchange.redirect_to)


def test_a_resource_sent_directly_is_captured_as_httpx_captures_it(tmp_path, web, monkeypatch):
    css = b"body { background: url(/png) }" * 50
    urls = [
        web.add("/image.png", PNG, "image/png", ETag='"i1"'),
        web.add("/style.css", gzip.compress(css), "text/css; charset=utf-8", **{"Content-Encoding": "gzip"}),
        web.add("/moved.png", b"", "text/html", status=302, Location="/image.png"),
        web.add("/twice", b"", None, status=302, **{"Location": "/image.png", "X-Seen": "a"}),
        web.add("/missing.png", b"not here", "text/plain", status=404),
        web.url("/truncated"),
        web.url("/redirect/3"),
    ]
    direct, direct_records, sent = _fetch(tmp_path, "direct", urls, None, monkeypatch)
    assert sent >= len(urls)  # every hop went the direct way
    via_httpx, httpx_records, none = _fetch(tmp_path, "httpx", urls, CookieJar(), monkeypatch)
    assert none == 0
    assert [_outcome(e) for e in direct] == [_outcome(e) for e in via_httpx]
    assert direct_records == httpx_records
    assert len(direct_records) >= 2 * len(urls)
    assert direct[0].ok and direct[0].status == 200 and direct[1].content_type.startswith("text/css")
    assert direct[5].error in (Reason.PROTOCOL, Reason.RESET)


def test_a_utf8_location_is_read_as_httpx_reads_it(tmp_path, web, monkeypatch):
    """httpx decodes a response's headers as UTF-8 when they are not ASCII; a redirect sent
    that way must lead to the same next URL on both paths."""
    web.add("/caf\u00e9.png", PNG, "image/png")
    web.add("/caf%C3%A9.png", PNG, "image/png")
    url = web.add("/to-cafe", b"", None, status=302, Location="/café.png".encode().decode("latin-1"))  # UTF-8 bytes on the wire
    direct, direct_records, sent = _fetch(tmp_path, "direct", [url], None, monkeypatch)
    via_httpx, httpx_records, _ = _fetch(tmp_path, "httpx", [url], CookieJar(), monkeypatch)
    assert sent == 2
    assert [_outcome(e) for e in direct] == [_outcome(e) for e in via_httpx]
    assert direct[0].redirects == [web.url("/café.png")] and direct[0].status == 200, (direct[0].error, direct[0].message)
    assert direct_records == httpx_records


def test_a_host_header_of_the_users_keeps_httpx_behaviour(tmp_path, web, monkeypatch):
    """--header "Host: …" replaces the Host httpx would add; the direct path would send two."""
    url = web.add("/hosted.png", PNG, "image/png")
    direct, direct_records, sent = _fetch(tmp_path, "direct", [url], None, monkeypatch, headers={"Host": "cdn.example"})
    assert sent == 0 and direct[0].status == 200
    assert web.recorder.headers["/hosted.png"][-1]["Host"] == "cdn.example"


def test_a_cookie_set_by_a_resource_goes_back_to_its_host(tmp_path, web, monkeypatch):
    first = web.add("/sets.png", PNG, "image/png", **{"Set-Cookie": "cdn=1; Path=/"})
    second = web.add("/after.png", PNG, "image/png")
    exchanges, _, sent = _fetch(tmp_path, "cookie", [first, second], None, monkeypatch)
    assert [e.status for e in exchanges] == [200, 200]
    assert sent == 1  # the jar now holds a cookie: the next request goes through httpx, which sends it
    assert web.recorder.cookies["/after.png"] == ["cdn=1"]


def test_a_refused_connection_maps_to_the_same_reason(tmp_path, monkeypatch):
    url = "http://127.0.0.1:9/gone.png"
    direct, _, sent = _fetch(tmp_path, "direct", [url], None, monkeypatch)
    via_httpx, _, _ = _fetch(tmp_path, "httpx", [url], CookieJar(), monkeypatch)
    assert sent == 1
    assert direct[0].error == via_httpx[0].error == Reason.CONNECT
    assert direct[0].message == via_httpx[0].message


@pytest.mark.parametrize("url", ["http://user:secret@127.0.0.1:{port}/image.png", "http://xn--/image.png"])
def test_urls_with_credentials_or_bad_labels_keep_httpx_behaviour(tmp_path, web, monkeypatch, url):
    web.add("/image.png", PNG, "image/png")
    url = url.format(port=web.port)
    direct, direct_records, sent = _fetch(tmp_path, "direct", [url], None, monkeypatch)
    via_httpx, httpx_records, _ = _fetch(tmp_path, "httpx", [url], CookieJar(), monkeypatch)
    assert sent == 0
    assert [_outcome(e) for e in direct] == [_outcome(e) for e in via_httpx]
    assert direct_records == httpx_records


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server on 127.0.0.1 with a self-signed certificate for that address."""
    import shutil
    import ssl
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.server_address[1], cert
    server.shutdown()


def test_a_resource_over_tls_is_captured_as_httpx_captures_it(tmp_path, tls_server, monkeypatch):
    port, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # httpx's TLS context trusts this certificate
    urls = [f"https://127.0.0.1:{port}/a.png", f"https://127.0.0.1:{port}/b.png"]
    direct, direct_records, sent = _fetch(tmp_path, "direct", urls, None, monkeypatch)
    via_httpx, httpx_records, _ = _fetch(tmp_path, "httpx", urls, CookieJar(), monkeypatch)
    assert sent == 2 and [e.status for e in direct] == [200, 200]
    assert [_outcome(e) for e in direct] == [_outcome(e) for e in via_httpx]
    assert direct_records == httpx_records


def test_an_untrusted_certificate_fails_alike_on_both_paths(tmp_path, tls_server, monkeypatch):
    port, _ = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    url = f"https://127.0.0.1:{port}/a.png"
    direct, _, sent = _fetch(tmp_path, "direct", [url], None, monkeypatch)
    via_httpx, _, _ = _fetch(tmp_path, "httpx", [url], CookieJar(), monkeypatch)
    assert sent == 1
    assert direct[0].error == via_httpx[0].error == Reason.TLS
    assert direct[0].message == via_httpx[0].message


def test_an_idle_connection_the_server_closed_is_seen_as_readable():
    """httpcore drops a pooled connection whose socket turned readable while idle (the server hung up)."""
    import socket

    from mirror.http.transport import _readable

    ours, theirs = socket.socketpair()
    try:
        assert not _readable(ours)
        theirs.close()
        assert _readable(ours)
    finally:
        ours.close()
    assert _readable(ours)  # closed here: no descriptor, nothing to wait for
