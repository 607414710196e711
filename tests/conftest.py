"""Shared fixtures: the repository's real seeds and a CLI runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirror.cli import app

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
CORPUS = Path(os.environ.get("MIRROR_CORPUS") or ROOT.parent / "shared" / "corpus")  # the real-page corpus


@pytest.fixture(autouse=True, scope="session")
def _http_only_cli():
    """`mirror fetch` renders text-less pages in chromium by default; the HTTP tests run
    without it (tests/test_browser_capture.py sets --browser itself)."""
    os.environ.setdefault("MIRROR_BROWSER", "never")


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run `mirror ...` in-process, in a temporary working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRROR_ARCHIVE", raising=False)
    runner = CliRunner()

    def run(*args: str, env: dict | None = None):
        from mirror.cli import _common as module

        module.out._console = module.err._console = None  # made again, as in a process of its own (COLUMNS, FORCE_COLOR)
        return runner.invoke(app, list(args), env=env, catch_exceptions=False)

    return run


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> None:
    """Browser tests need Debian's chromium: skipped with a message where it is missing, failed under CI."""
    if CHROMIUM is None:
        message = "Debian's chromium is not installed (apt-get install chromium); .ci/run installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        pytest.fail("playwright is missing: install the test extras")


def pytest_configure(config):
    """A test run started in the background by a script (`pytest &`) inherits SIGINT ignored, and
    so would every process it starts: the Ctrl-C tests' `mirror fetch` would ignore their Ctrl-C."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_mirror(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed console script as a real process."""
    full_env = {k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


async def render_directly(renderer, url: str):
    """A page rendered by a `Renderer` alone (no run, no gates): its document and every request
    it makes fetched as they are, by httpx. For tests of the browser's own limits."""
    import httpx

    from mirror.browser.routes import BrowserRequest, Served

    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as client:

        async def answer(request: BrowserRequest) -> Served:
            try:
                response = await client.get(request.url, headers={k: v for k, v in request.headers.items() if k.lower() != "host"})
            except httpx.HTTPError:
                return Served(refused="failed")
            return Served(response.status_code, list(response.headers.items()), response.content)

        document = await answer(BrowserRequest(url, {}, True, "document"))
        return await renderer.render(url, document, answer)


def links_json(result) -> list[dict]:
    return json.loads(result.stdout)


@pytest.fixture
def web():
    """A hostile web server on 127.0.0.1."""
    from .webserver import HostileServer

    with HostileServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def web2():
    """A second host, 127.0.0.2, for per-host and cookie-domain tests."""
    from .webserver import HostileServer

    with HostileServer("127.0.0.2") as server:
        yield server


@pytest.fixture(scope="session")
def corpus_server():
    """../shared/corpus served as static files on 127.0.0.1 (no charset in Content-Type)."""
    if not CORPUS.is_dir():
        pytest.skip(f"real-page corpus not found at {CORPUS}: these tests need ../shared/corpus beside the repo")
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(CORPUS)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def corpus_archive(corpus_server, tmp_path_factory):
    """An archive fetched from real saved pages: Chinese news and WeChat, Japanese, 40 English ones."""
    from mirror.fetch import FetchOptions, run
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    pages = sorted(CORPUS.glob("gne-zh/tests/*/*.html"))
    english = sorted(CORPUS.glob("readability/test-pages/*/source.html"))[:40]
    asian = [CORPUS / f"readability/test-pages/{name}/source.html" for name in ("yahoo-4", "hukumusume", "gmw", "youth", "pixnet", "qq")]
    pages += english + [p for p in asian if p.exists() and p not in english]
    urls = [f"{corpus_server}/{p.relative_to(CORPUS).as_posix()}" for p in pages]
    folder = tmp_path_factory.mktemp("corpus") / "archive"
    with Archive(folder) as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        run(archive, FetchOptions(delay=0, per_host=8, retries=0, images=False, workers=2))
    return folder


@pytest.fixture
def dns(monkeypatch):
    """A DNS server of the test's own on 127.0.0.1 (see tests/dnsserver.py), mirror's resolver pointed at it."""
    from .dnsserver import DNSServer

    with DNSServer("127.0.0.1") as server:
        monkeypatch.setenv("MIRROR_NAMESERVERS", server.nameserver)
        yield server
