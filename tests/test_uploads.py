"""`mirror serve --uploads`: a page uploaded as SingleFile's "upload to a REST Form API" sends it
(rest-form-api/index.js: multipart/form-data, the page in `file` as SingleFile.html, its URL in
`url`, `Authorization: Bearer TOKEN`, `Accept: multipart/form-data`, from the extension's
origin) is archived; no token or a wrong one is a 401 and nothing is stored; web pages and the
archive's own snapshots (another origin) cannot reach the route; a 200 MB upload is refused with
a 413 while the server's memory stays flat; every other route stays read-only."""

from __future__ import annotations

import json
import socket
import sqlite3
import stat
import time
from pathlib import Path

import httpx
import pytest

from .helpers import run_mirror
from .member_site import Served

EXTENSION = "chrome-extension://mpiodijhokgodhhofbcjdecpffjipkle"  # SingleFile's id in the Chrome Web Store
URL = "https://zhuanlan.zhihu.com/p/690000001"
PAGE = (  # SingleFile's header comment as it writes it: each line ends in a space
    '<!DOCTYPE html> <html lang="zh"><!--\n Page saved with SingleFile \n url: https://zhuanlan.zhihu.com/p/690000001 \n'
    " saved date: Sat Nov 28 2026 18:40:00 GMT+0100 (Central European Standard Time)\n-->"
    '<head><meta charset="utf-8"><title>张量并行的通信开销</title></head><body><article><h1>张量并行的通信开销</h1>'
    "<p>张量并行把一个矩阵乘法切到多张卡上，每一层都要做一次全规约，通信量和隐藏层大小成正比。</p>"
    "<p>所以张量并行通常只在一台机器内部使用，机器之间用流水线并行或数据并行，这样通信走的是高速互联。</p></article></body></html>"
)


@pytest.fixture
def archive(tmp_path):
    folder = tmp_path / "archive"
    made = run_mirror("links", "--archive", str(folder), str(_seed(tmp_path)), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return folder


def _seed(tmp_path: Path) -> Path:
    path = tmp_path / "list.md"
    path.write_text("- https://example.org/unfetched\n", encoding="utf-8")
    return path


def _upload(
    served: Served, token: str | None, *, origin: str | None = EXTENSION, page: str = PAGE, url: str = URL, scheme: str = "Bearer"
) -> httpx.Response:
    headers = {"Accept": "multipart/form-data"}
    if token is not None:
        headers["Authorization"] = f"{scheme} {token}"
    if origin is not None:
        headers["Origin"] = origin
    files = {"file": ("SingleFile.html", page.encode("utf-8"), "text/html")}
    return httpx.post(f"{served.url}/-/mirror/add", headers=headers, files=files, data={"url": url}, timeout=60)


def _stored(archive: Path) -> tuple[int, int]:
    with sqlite3.connect(archive / "mirror.db") as db:
        pages = db.execute("select count(*) from pages where source = 'added'").fetchone()[0]
    return pages, len(list((archive / "warc").glob("*.warc.gz"))) if (archive / "warc").is_dir() else 0


def test_an_upload_as_singlefile_sends_it_is_archived(archive):
    with Served(archive, "--uploads") as served:
        token_file = archive / "upload-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        answer = _upload(served, token)
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["ok"] and body["url"] == URL and body["status"] == "archived"
        assert answer.headers["access-control-allow-origin"] == EXTENSION
        reader = httpx.get(served.url + body["reader"])
        assert reader.status_code == 200 and "Added by you" in reader.text and "uploaded from the browser" in reader.text
    found = run_mirror("search", "全规约", "--json", "--archive", str(archive), cwd=archive.parent)
    assert [hit["url"] for hit in json.loads(found.stdout)] == [URL]
    assert not (archive / ".uploads").exists() or not any((archive / ".uploads").iterdir())  # nothing left behind


def test_the_setup_steps_and_token_are_printed_once(archive):
    served = Served(archive, "--uploads")
    with served:
        pass
    said = served.process.stderr.read().decode()
    token = (archive / "upload-token").read_text().strip()
    assert "/-/mirror/add" in said and token in said and "file field name: file" in said


def test_no_token_or_a_wrong_one_stores_nothing(archive):
    with Served(archive, "--uploads") as served:
        token = (archive / "upload-token").read_text().strip()
        for given, scheme in ((None, "Bearer"), ("not-the-token", "Bearer"), (token[:-1], "Bearer"), (token, "Basic"), (token, "Token")):
            answer = _upload(served, given, scheme=scheme)
            assert answer.status_code == 401, answer.text
        (archive / "upload-token").write_text("")  # emptied by hand: no empty token matches, a new one is made
        answer = httpx.post(f"{served.url}/-/mirror/add", headers={"Authorization": "Bearer"}, files={"file": ("SingleFile.html", PAGE.encode())})
        assert answer.status_code == 401 and len((archive / "upload-token").read_text().strip()) >= 32
        assert _stored(archive) == (0, 0)


def test_web_pages_and_snapshots_cannot_reach_the_route(archive):
    with Served(archive, "--uploads") as served:
        token = (archive / "upload-token").read_text().strip()
        for origin in ("http://evil.example", "null", served.url.replace("127.0.0.1", "localhost")):
            answer = _upload(served, token, origin=origin)
            assert answer.status_code == 403 and "access-control-allow-origin" not in answer.headers
            preflight = httpx.options(
                f"{served.url}/-/mirror/add",
                headers={"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"},
            )
            assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
        # a form on another site, posted in the browser (no CORS, no token): Fetch Metadata says cross-site
        answer = httpx.post(
            f"{served.url}/-/mirror/add", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Origin": "http://evil.example"}
        )
        assert answer.status_code == 403
        preflight = httpx.options(
            f"{served.url}/-/mirror/add",
            headers={"Origin": EXTENSION, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"},
        )
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == EXTENSION
        assert _stored(archive) == (0, 0)


def test_uploads_are_off_unless_asked(archive):
    with Served(archive) as served:
        answer = _upload(served, "anything")
        assert answer.status_code == 404
    assert not (archive / "upload-token").exists()


def test_other_routes_stay_read_only(archive):
    with Served(archive, "--uploads") as served:
        token = (archive / "upload-token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        for path in ("/mirror/pages/-/insert", "/mirror/-/create", "/mirror/-/query", "/-/mirror/search", "/-/mirror/page/1"):
            answer = httpx.post(served.url + path, headers=headers, content=b'{"row": {"url": "https://x.test/"}, "sql": "delete from pages"}')
            if "/-/mirror/" not in path:  # datasette's write API (1.0; 0.65 has none): the upload token is no datasette token
                assert answer.status_code >= 400, (path, answer.status_code)
    with sqlite3.connect(archive / "mirror.db") as db:
        assert db.execute("select count(*) from pages where url = 'https://x.test/'").fetchone()[0] == 0
        assert db.execute("select count(*) from pages where url = 'https://example.org/unfetched'").fetchone()[0] == 1


def _send_large(port: int, token: str, size: int, *, declared: bool) -> tuple[int, int]:
    """POST `size` bytes of a form, declared by Content-Length or chunked, sent by a thread while
    the answer is read as it comes (a server that refuses stops reading and closes); (the
    answer's status, bytes sent)."""
    import threading

    boundary = "----mirrortest"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="SingleFile.html"\r\nContent-Type: text/html\r\n\r\n'
    connection = socket.create_connection(("127.0.0.1", port), timeout=120)
    request = (
        f"POST /-/mirror/add HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nOrigin: {EXTENSION}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
    )
    request += f"Content-Length: {size}\r\n\r\n" if declared else "Transfer-Encoding: chunked\r\n\r\n"
    sent = [0]

    def send() -> None:
        piece = b"<p>" + b"x" * (1 << 20)
        try:
            connection.sendall(request.encode() + (head.encode() if declared else f"{len(head):x}\r\n{head}\r\n".encode()))
            sent[0] = len(head)
            while sent[0] < size:
                connection.sendall(piece if declared else f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                sent[0] += len(piece)
        except OSError:
            pass  # the server answered and closed: what a client sees when it sends on

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    answer = b""
    try:
        while b"\r\n" not in answer and (data := connection.recv(4096)):
            answer += data
    except OSError:
        pass
    connection.close()
    sender.join(timeout=60)
    return (int(answer.split(b" ")[1]) if answer.startswith(b"HTTP/1.1 ") else 0), sent[0]


def test_a_200_mb_upload_is_refused_while_memory_stays_flat(archive):
    with Served(archive, "--uploads") as served:
        token = (archive / "upload-token").read_text().strip()
        httpx.get(f"{served.url}/-/mirror/search?q=x")  # the server warmed up: its pages and imports loaded
        before = served.rss_kb()
        status, sent = _send_large(served.port, token, 200 * 1024 * 1024, declared=False)  # counted as it streams
        assert status == 413
        assert sent > 100 * 1024 * 1024  # it read (and threw away to disk) as far as the limit
        streamed = served.rss_kb()
        status, _ = _send_large(served.port, token, 200 * 1024 * 1024, declared=True)  # refused on its Content-Length
        assert status == 413
        assert streamed - before < 40 * 1024, (before, streamed)  # kB: never the body in memory
        assert served.process.poll() is None
    assert _stored(archive) == (0, 0)
    assert not any((archive / ".uploads").iterdir())


WORKER = """// Posts a page as SingleFile's REST Form API destination does: a FormData with the page as a File
// named SingleFile.html (text/html) in `file`, its URL in `url`, the token as a Bearer header.
const form = new FormData();
form.append("file", new File([new Blob([PAGE], { type: "text/html" })], "SingleFile.html", { type: "text/html" }));
form.append("url", URL);
fetch(ENDPOINT, { method: "POST", body: form, headers: new Map([["Authorization", "Bearer " + TOKEN], ["Accept", "multipart/form-data"]]) })
  .then((response) => response.json())
  .then((answer) => console.log("uploaded", JSON.stringify(answer)));
"""


def test_an_upload_from_a_browser_extension(archive, tmp_path):
    """A real extension in headless chromium (its own origin, chrome-extension://…, host
    permission for 127.0.0.1) uploads the page with the browser's own fetch and FormData."""
    from .helpers import CHROMIUM, chromium_or_skip
    from .member_site import CHROMIUM_QUIET

    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with Served(archive, "--uploads") as served:
        token = (archive / "upload-token").read_text().strip()
        extension = tmp_path / "extension"
        extension.mkdir()
        manifest = {
            "manifest_version": 3,
            "name": "upload",
            "version": "1",
            "host_permissions": ["http://127.0.0.1/*"],
            "background": {"service_worker": "worker.js"},
        }
        (extension / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        constants = {"PAGE": PAGE, "URL": URL, "ENDPOINT": f"{served.url}/-/mirror/add", "TOKEN": token}
        (extension / "worker.js").write_text("".join(f"const {k} = {json.dumps(v)};\n" for k, v in constants.items()) + WORKER, encoding="utf-8")
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / "profile"),
                executable_path=CHROMIUM,
                headless=True,
                args=[*CHROMIUM_QUIET, f"--disable-extensions-except={extension}", f"--load-extension={extension}"],
            )
            try:
                deadline = time.monotonic() + 30
                while _stored(archive)[0] == 0 and time.monotonic() < deadline:
                    time.sleep(0.5)
            finally:
                context.close()
    assert _stored(archive)[0] == 1
    with sqlite3.connect(archive / "mirror.db") as db:
        assert json.loads(db.execute("select provenance from pages where url = ?", [URL]).fetchone()[0])["file"] == "SingleFile.html"
