"""One request path, httpx's (mirror.http.connect: a transport whose connections go to the addresses
mirror's lookup checked, or the proxy the environment names): what a page's resources give and
what reaches the WARC files, against real servers on 127.0.0.x."""

from __future__ import annotations

import asyncio
import gzip
from http.cookiejar import CookieJar

import pytest
from warcio.archiveiterator import ArchiveIterator

from mirror._types import Reason
from mirror.http import Budget, Client, Reach
from mirror.warc import CaptureWriter

from .webserver import PNG


def _records(folder) -> list:
    """(type, target, status line, headers without Date, payload) of every record."""
    out = []
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "warcinfo":
                    continue  # (each file opens with one)
                headers = [(k.lower(), v) for k, v in record.http_headers.headers if k.lower() != "date"]
                out.append(
                    (
                        record.rec_type,
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.http_headers.statusline,
                        headers,
                        record.content_stream().read(),
                    )
                )
    return out


def _fetch(tmp_path, name: str, urls: list[str], cookies: CookieJar | None = None, headers: dict | None = None) -> tuple[list, list]:
    """Every URL as a page resource with a fresh client; (exchanges, records)."""

    async def go():
        writer = CaptureWriter(tmp_path / name)
        client = Client(
            writer,
            concurrency=4,
            per_host=2,
            delay=0,
            timeout=5,
            max_bytes=1_000_000,
            max_redirects=3,
            headers={"User-Agent": "mirror-test", "Accept-Encoding": "gzip, deflate", **(headers or {})},
            cookies=cookies,
        )
        budget = Budget(timeout=3, retries=0, concurrency=4)
        try:
            return [await client.get(url, budget=budget, reach=Reach.LOOPBACK) for url in urls]
        finally:
            await client.aclose()
            writer.close()

    return asyncio.run(go()), _records(tmp_path / name)


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
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )

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


def test_resources_are_captured_with_their_redirects_and_failures(tmp_path, web):
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
    answers, records = _fetch(tmp_path, "resources", urls)
    assert answers[0].ok and answers[0].status == 200 and answers[0].etag == '"i1"'
    assert answers[1].content_type.startswith("text/css")
    assert [a.redirects for a in answers[2:4]] == [[web.url("/image.png")]] * 2 and answers[2].status == 200
    assert (answers[4].status, answers[4].error) == (404, "http_404")
    assert answers[5].error in (Reason.PROTOCOL, Reason.RESET)
    assert answers[6].ok and len(answers[6].redirects) == 3
    responses = [r for r in records if r[0] == "response"]
    css_record = next(r for r in responses if r[1] == urls[1])
    assert ("content-encoding", "gzip") in css_record[3] and css_record[4] == css  # (read back decoded)
    assert next(r for r in responses if r[1] == urls[0])[4] == PNG
    assert len(records) >= 2 * len(urls)  # a request and a response each, redirects too


def test_a_utf8_location_is_read_as_utf8(tmp_path, web):
    """httpx decodes a response's headers as UTF-8 when they are not ASCII: a redirect sent so leads to the page."""
    web.add("/caf\u00e9.png", PNG, "image/png")
    web.add("/caf%C3%A9.png", PNG, "image/png")
    url = web.add("/to-cafe", b"", None, status=302, Location="/café.png".encode().decode("latin-1"))  # UTF-8 bytes on the wire
    (answer,), _ = _fetch(tmp_path, "cafe", [url])
    assert answer.redirects == [web.url("/café.png")] and answer.status == 200, (answer.error, answer.message)


def test_a_location_that_cannot_be_parsed_keeps_its_response(tmp_path, web):
    """The redirect loop is mirror's own: a Location httpx cannot read is no next request, and the
    response that sent it is captured, not lost."""
    url = web.add("/to-nowhere", b"", None, status=302, Location="http://xn--/x.png")
    (answer,), records = _fetch(tmp_path, "nowhere", [url])
    assert answer.error == Reason.BAD_URL
    assert [(r[1], r[2]) for r in records if r[0] == "response"] == [(url, "302 Found")]


def test_a_host_header_of_the_users_replaces_the_one_httpx_adds(tmp_path, web):
    url = web.add("/hosted.png", PNG, "image/png")
    (answer,), _ = _fetch(tmp_path, "host", [url], headers={"Host": "cdn.example"})
    assert answer.status == 200
    assert web.recorder.headers["/hosted.png"][-1]["Host"] == "cdn.example"


def test_a_cookie_set_by_a_resource_goes_back_to_its_host(tmp_path, web):
    first = web.add("/sets.png", PNG, "image/png", **{"Set-Cookie": "cdn=1; Path=/"})
    second = web.add("/after.png", PNG, "image/png")
    answers, _ = _fetch(tmp_path, "cookie", [first, second])
    assert [e.status for e in answers] == [200, 200]
    assert web.recorder.cookies["/after.png"] == ["cdn=1"]


def test_a_refused_connection_is_a_connect_failure(tmp_path):
    (answer,), _ = _fetch(tmp_path, "refused", ["http://127.0.0.1:9/gone.png"])
    assert answer.error == Reason.CONNECT and "All connection attempts failed" in answer.message


def test_credentials_in_a_url_are_sent_and_a_bad_label_is_a_bad_url(tmp_path, web):
    web.add("/image.png", PNG, "image/png")
    answers, _ = _fetch(tmp_path, "odd", [f"http://user:secret@127.0.0.1:{web.port}/image.png", "http://xn--/image.png"])
    assert answers[0].status == 200 and web.recorder.headers["/image.png"][-1]["Authorization"].startswith("Basic ")
    assert answers[1].error == Reason.BAD_URL


def test_a_resource_over_tls_is_captured(tmp_path, tls_server, monkeypatch):
    port, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # httpx's TLS context trusts this certificate
    urls = [f"https://127.0.0.1:{port}/a.png", f"https://127.0.0.1:{port}/b.png"]
    answers, records = _fetch(tmp_path, "tls", urls)
    assert [e.status for e in answers] == [200, 200]
    assert [r[4] for r in records if r[0] == "response"] == [PNG, PNG]


def test_an_untrusted_certificate_is_a_tls_failure(tmp_path, tls_server, monkeypatch):
    port, _ = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    (answer,), _ = _fetch(tmp_path, "untrusted", [f"https://127.0.0.1:{port}/a.png"])
    assert answer.error == Reason.TLS and "CERTIFICATE_VERIFY_FAILED" in answer.message


@pytest.mark.parametrize(
    "environment, url, proxy",
    [
        ({"HTTP_PROXY": "http://p:1"}, "http://a.example/", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1"}, "https://a.example/", None),  # (one proxy for http, none for https)
        ({"ALL_PROXY": "p:2"}, "https://a.example/", "http://p:2"),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "intranet.test:8080"}, "http://intranet.test:8080/x", None),  # (a port: that port)
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "intranet.test:8080"}, "http://intranet.test:8081/x", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://www.example.com/", None),  # (a name and its subdomains)
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://wwwexample.com/", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "http://example.com/", "http://p:1"),  # (subdomains only)
        ({"ALL_PROXY": "http://p:2", "NO_PROXY": "localhost,::1,127.0.0.1"}, "http://[::1]:8/", None),
        ({"ALL_PROXY": "http://p:2", "NO_PROXY": "http://only.http"}, "https://only.http/", "http://p:2"),  # (a URL: its scheme)
        ({"HTTPS_PROXY": "http://p:3", "NO_PROXY": "x.test, *"}, "https://a.example/", None),
    ],
)
def test_the_proxy_a_url_goes_through_is_read_as_httpx_reads_the_environment(monkeypatch, environment, url, proxy):
    from mirror.http.connect import proxy_for

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert proxy_for(url) == proxy
