"""Fixtures the test files share: the test web (127.0.0.x servers started here), a DNS server, a
CLI runner, the session's extraction pool, and archives built once and read by several files
(the real-page corpus, the hostile archive, the reader's). Plain helpers are in helpers.py."""

from __future__ import annotations

import fcntl
import functools
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirror.cli import app

from .helpers import CORPUS, chromium, close_extraction_pool, corpus_or_skip, extraction_pool, mirror_serve


@pytest.fixture(autouse=True, scope="session")
def _http_only_cli():
    """`mirror fetch` renders text-less pages in chromium by default; the HTTP tests run
    without it (the browser tests ask for it themselves)."""
    os.environ.setdefault("MIRROR_BROWSER", "never")


@pytest.fixture(autouse=True, scope="session")
def _extraction_pool_stopped():
    """The extraction workers the session's runs share (helpers.extraction_pool), stopped at its end."""
    yield
    close_extraction_pool()


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run `mirror ...` in-process, in a temporary working folder. Its fetch runs and reindexes
    extract in the session's pool (`pool=`), as a process of its own would in a pool of its own."""
    import mirror.fetch
    from mirror.fetch.reextract import reindex
    from mirror.fetch.runner import run

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRROR_ARCHIVE", raising=False)
    monkeypatch.setattr(mirror.fetch, "run", functools.partial(run, pool=extraction_pool()))
    monkeypatch.setattr(mirror.fetch, "reindex", functools.partial(reindex, pool=extraction_pool()))
    runner = CliRunner()

    def run_cli(*args: str, env: dict | None = None):
        from mirror.cli import _common as module

        module.out._console = module.err._console = None  # made again, as in a process of its own (COLUMNS, FORCE_COLOR)
        return runner.invoke(app, list(args), env=env, catch_exceptions=False)

    return run_cli


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker more than the cores. Much of the suite waits on a server's delay, a browser
    or a process it started while holding no core; a third worker on 2 cores keeps both busy to the
    end (7:22 for the whole suite here, against 9:17 with two workers before the last trims)."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config):
    """A test run started in the background by a script (`pytest &`) inherits SIGINT ignored, and
    so would every process it starts: the Ctrl-C tests' `mirror fetch` would ignore their Ctrl-C."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


@pytest.fixture
def calm_web():
    """Ten well-behaved pages (helpers.CALM) on two hosts."""
    from .helpers import CALM
    from .webserver import HostileServer

    with HostileServer("127.0.0.1", lifetime=300) as one, HostileServer("127.0.0.2", lifetime=300) as two:
        yield [(one if i % 2 else two).url(route) for i, route in enumerate(CALM)]


@pytest.fixture
def dns(monkeypatch):
    """A DNS server of the test's own on 127.0.0.1 (see tests/dnsserver.py), mirror's resolver pointed at it."""
    from .dnsserver import DNSServer

    with DNSServer("127.0.0.1") as server:
        monkeypatch.setenv("MIRROR_NAMESERVERS", server.nameserver)
        yield server


@pytest.fixture(scope="module")
def site():
    """The loopback site of pages that need a browser (tests/browsersite.py)."""
    from .browsersite import Site

    server = Site()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# --- archives built once -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def corpus_server():
    """../shared/corpus served as static files on 127.0.0.1 (no charset in Content-Type)."""
    corpus_or_skip()
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
def corpus_archive(tmp_path_factory, worker_id):
    """An archive fetched from real saved pages: Chinese news and WeChat, Japanese, 40 English ones.
    Fetched once a test run: the first xdist worker to need it fetches it, the others wait for it
    (a lock in the run's shared temporary folder) and read the same archive."""
    corpus_or_skip()
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    folder = shared / "corpus" / "archive"
    with open(shared / "corpus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder.parent / "done").exists():
            _fetch_corpus(folder, tmp_path_factory)
            (folder.parent / "done").touch()
    return folder


def _fetch_corpus(folder: Path, tmp_path_factory) -> None:
    import http.server

    from mirror.fetch import FetchOptions, run
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    pages = sorted(CORPUS.glob("gne-zh/tests/*/*.html"))
    english = sorted(CORPUS.glob("readability/test-pages/*/source.html"))[:40]
    asian = [CORPUS / f"readability/test-pages/{name}/source.html" for name in ("yahoo-4", "hukumusume", "gmw", "youth", "pixnet", "qq")]
    pages += english + [p for p in asian if p.exists() and p not in english]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(CORPUS)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        urls = [f"{base}/{p.relative_to(CORPUS).as_posix()}" for p in pages]
        folder.mkdir(parents=True)
        with Archive(folder) as archive, archive.lock():
            archive.record_inventory(links_from_urls(urls))
            run(archive, FetchOptions(delay=0, per_host=8, retries=0, images=False, workers=2), pool=extraction_pool())
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def hostile_archive(tmp_path_factory) -> Path:
    """An archive of hostile pages (tests/hostile_archive.py), read by the security, search and CLI tests."""
    from .hostile_archive import build

    return build(tmp_path_factory.mktemp("hostile-input"))


@pytest.fixture(scope="session")
def hostile_ds(hostile_archive):
    """The hostile archive in datasette (the plugin loaded from its entry point)."""
    from datasette.app import Datasette

    return Datasette([str(hostile_archive / "mirror.db")])


# --- the reader in chromium: `built` is the test module's own archive --------------------------


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    """Where screenshots go: $MIRROR_TEST_ARTIFACTS, else the test's temporary folder."""
    folder = Path(os.environ["MIRROR_TEST_ARTIFACTS"]) if os.environ.get("MIRROR_TEST_ARTIFACTS") else tmp_path_factory.mktemp("reader") / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots of the reader and the reading home: {folder}")
    return folder


@pytest.fixture(scope="module")
def root(built):
    """The module's archive (its `built` fixture) served by `mirror serve`; its root URL."""
    with mirror_serve(built["archive"]) as url:
        yield url


@pytest.fixture(scope="module")
def browser(root):
    with chromium() as running:
        yield running


@pytest.fixture
def open_page(browser):
    """A new tab of a given viewport; fails the test if the page breaks its CSP."""
    pages, violations = [], []

    def open_(width: int = 1000, height: int = 900):
        page = browser.new_page(viewport={"width": width, "height": height})
        page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
        pages.append(page)
        return page

    yield open_
    for page in pages:
        page.close()
    assert violations == []
