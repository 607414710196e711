"""What the test files share besides fixtures (those are in conftest.py): where things are, how a
test runs `mirror` (in-process through the project's API, or as a real process), and how it
reads back what a run left. Test files import from here, never from each other."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
CORPUS = Path(os.environ.get("MIRROR_CORPUS") or ROOT.parent / "shared" / "corpus")  # the real-page corpus
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def needs(what: str, hint: str) -> None:
    """A test that needs `what` (chromium, the corpus) where it is missing: skipped with a message
    saying so on a developer's machine, failed under CI (`CI` set), where it must be there."""
    message = f"{what} is missing: {hint}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def chromium_or_skip() -> None:
    """Browser tests need Debian's chromium: skipped with a message where it is missing, failed under CI."""
    if CHROMIUM is None:
        needs("Debian's chromium", "apt-get install chromium; .ci/run installs it")
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        pytest.fail("playwright is missing: install the test extras")


def corpus_or_skip(path: Path = CORPUS) -> Path:
    """`path` in the real-page corpus (../shared/corpus, or $MIRROR_CORPUS): skipped with a message
    where it is missing, failed under CI."""
    if not path.exists():
        needs(f"the real-page corpus ({path})", "these tests read real saved pages from ../shared/corpus beside the repository, or $MIRROR_CORPUS")
    return path


# --- mirror as a process -----------------------------------------------------------------------


def run_mirror(*args: str, cwd: Path, env: dict | None = None, timeout: float = 180, preexec_fn=None) -> subprocess.CompletedProcess:
    """Run `python -m mirror ...` as a real process (no archive or crash point of the test's own
    environment; `env` adds to it)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("MIRROR_ARCHIVE", "MIRROR_CRASH_AT")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def start_fetch(tmp_path, *args):
    """`mirror fetch ...` started as a process, not waited for."""
    return subprocess.Popen(
        [sys.executable, "-m", "mirror", "fetch", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"},
    )


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


SERVER_JITTER = 0.5  # how late a loaded machine may let a test server's thread note a request's start


def assert_spaced(starts: list[float], delay: float) -> None:
    """The requests a test server saw were `delay` apart, as far as its clock can tell.

    The server notes a start when its thread gets to run, which a loaded machine (chromium, Ray and
    the other tests beside it) delays by up to SERVER_JITTER (0.38 s seen): one gap grows and the
    next shrinks by as much, so no single gap can be held to `delay` here (the client's own clock
    can: `attempts.started_at`). What jitter cannot do is shorten most gaps, or the whole span, where
    the middle starts' jitter cancels out; a gate that let two requests go together shortens half."""
    assert len(starts) >= 5 and delay >= 0.2
    starts = sorted(starts)
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    assert statistics.median(gaps) >= 0.75 * delay, gaps
    assert starts[-1] - starts[0] >= (len(starts) - 1) * delay - SERVER_JITTER, gaps


def assert_client_spaced(db_path: Path, url_prefix: str, delay: float) -> None:
    """The pages' attempts under `url_prefix` started `delay` apart on the client's clock (each
    attempt's start is taken once its host's gate let it go)."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute("select started_at from attempts where url like ? order by started_at", [url_prefix + "%"]).fetchall()
    times = [datetime.fromisoformat(started).timestamp() for (started,) in rows]
    assert len(times) >= 2, url_prefix
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.99 * delay, (url_prefix, times)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def mirror_serve(archive_dir: Path):
    """`mirror serve` as a real process on a free port; yields its root URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--port", str(port), "--archive", str(archive_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        pytest.fail("mirror serve did not start: " + server.stderr.read().decode())
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- runs in-process ---------------------------------------------------------------------------

_pool: ProcessPoolExecutor | None = None


def extraction_pool() -> ProcessPoolExecutor:
    """The test process's extraction workers, handed to every run and reindex a test starts
    in-process (`mirror.fetch.run(..., pool=)`): two spawned processes that import trafilatura
    once, where each run would start its own (~1 s of CPU a run). Made again if a test broke it."""
    global _pool
    if _pool is not None:
        try:
            _pool.submit(int).result()
        except BrokenProcessPool:
            _pool = None
    if _pool is None:
        from mirror.extract.pool import extraction_pool as make

        _pool = make(2)
    return _pool


def close_extraction_pool() -> None:
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None


QUICK_OPTIONS = dict(delay=0.0, timeout=10.0, retries=0, workers=1)  # a run over the test web: no waits, no retries
RETRYING_OPTIONS = dict(delay=0.0, timeout=5.0, retries=2, backoff=0.05)  # the same with the retries of the fetch tests


def fetch(folder: Path, urls: list[str], *, on_page=None, on_render=None, **options) -> tuple[sqlite_utils.Database, object]:
    """`urls` recorded in folder/archive and fetched by one run (`QUICK_OPTIONS`, then `options`) with the
    session's extraction pool; the archive's database and the run's summary."""
    from mirror.fetch import FetchOptions, run
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    with Archive(folder / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(archive, FetchOptions(**{**QUICK_OPTIONS, **options}), on_page=on_page, on_render=on_render, pool=extraction_pool())
    return sqlite_utils.Database(folder / "archive" / "mirror.db"), summary


def fetch_urls(tmp_path: Path, urls: list[str], **options) -> tuple[sqlite_utils.Database, object]:
    """`fetch` with retries (`RETRYING_OPTIONS`)."""
    return fetch(tmp_path, urls, **{**RETRYING_OPTIONS, **options})


def client_for(folder: Path, **options):
    """The run's HTTP client alone, writing its captures to `folder`."""
    from mirror import warc
    from mirror.http import Client

    return Client(
        warc.CaptureWriter(folder),
        **{**dict(concurrency=4, per_host=2, delay=0, timeout=5, max_bytes=10**7, max_redirects=5, headers={}, cookies=None), **options},
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


# --- what a run left ---------------------------------------------------------------------------


def db_of(folder) -> sqlite_utils.Database:
    return sqlite_utils.Database(folder / "archive" / "mirror.db")


def page(db, url):
    return db["pages"].get(url)


def attempts(db, url):
    return list(db.query("select * from attempts where url = ? order by id", [url]))


def count(db_path, sql):
    """One number from a database a running process writes (0 before it exists)."""
    if not db_path.exists():
        return 0
    conn = sqlite3.connect(db_path, timeout=30)
    try:
        return conn.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def warc_records(archive_dir: Path) -> list:
    """(type, target URI, payload) of every record of the archive's WARC files, each read whole."""
    records = []
    for path in sorted((archive_dir / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.content_stream().read()))
    return records


def page_outcomes(archive: Path) -> dict[str, tuple]:
    """(status, error) by the path of each page's URL."""
    db = sqlite_utils.Database(archive / "mirror.db")
    return {r["url"].split("/", 3)[3]: (r["status"], r["error"]) for r in db.query("select url, status, error from pages")}


def integrity(archive: Path) -> str:
    conn = sqlite3.connect(archive / "mirror.db")
    try:
        return conn.execute("pragma integrity_check").fetchone()[0]
    finally:
        conn.close()


def links_json(result) -> list[dict]:
    import json

    return json.loads(result.stdout)


def ds_get(ds, path: str, **kwargs):
    """A request to a `Datasette` through its in-process client, after its start-up hooks."""

    async def go():
        await ds.invoke_startup()
        return await ds.client.get(path, **kwargs)

    return asyncio.run(go())


# --- pages and reading lists -------------------------------------------------------------------

_WITH_IMAGES = (
    "<html><head><title>流水线并行</title></head><body><article><h1>流水线并行</h1>"
    "<p>流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。为了减少设备空闲，微批次被依次送入流水线。</p>"
    "<p>气泡是流水线并行的主要开销：设备在等待上游结果时无事可做。交错调度可以进一步压缩气泡。</p>"
    "{images}</article></body></html>"
)


def with_images(*srcs: str) -> bytes:
    """A Chinese article showing an image from each of `srcs`."""
    return _WITH_IMAGES.format(images="".join(f'<p><img src="{s}" alt="图"></p>' for s in srcs)).encode()


CALM = ["/article/a", "/article/b", "/article/c", "/article/d", "/article/e", "/article/f", "/pdf", "/png", "/missing", "/gbk-as-utf8"]


def seed_folder(root: Path, urls: list[str]) -> None:
    (root / "seeds").mkdir(parents=True)
    (root / "seeds" / "calm.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour (the background image the stylesheet loads)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


STYLED = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>A styled page</title>
<link rel="stylesheet" href="/css/site.css"></head>
<body><nav><ul><li><a href="/one">One</a></li><li><a href="/two">Two</a></li></ul></nav>
<main id="card"><h1>Styled page, 样式</h1>
<p>This page takes its layout, colours, font and background from an external stylesheet, which
imports a second one and loads a web font and a background image. Its archived snapshot must look
the same as the live page, with everything served from the archive and nothing from the network.</p>
</main></body></html>"""


SITE_CSS = """@import "theme.css";
@font-face { font-family: "Probe"; src: url("../fonts/probe.ttf") format("truetype"); }
nav ul { list-style: none; display: flex; gap: 12px; margin: 0; padding: 8px; background: rgb(30, 30, 60); }
nav a { color: rgb(250, 220, 90); }
#card { width: 420px; margin: 20px; padding: 16px; font-family: "Probe", serif;
        background: url("/img/bg.png") repeat; border: 3px solid rgb(200, 40, 40); }"""


THEME_CSS = "#card h1 { color: rgb(10, 120, 200); font-size: 26px; } #card p { color: rgb(60, 60, 60); line-height: 1.6; }"


ZH_ARTICLE = """<!DOCTYPE html><html><head>{meta}<title>显存优化实战</title></head><body>
<article><h1>显存优化实战</h1>
<p>大模型训练时，显存往往是最紧张的资源。本文介绍激活重计算、混合精度和零冗余优化器三种办法。</p>
<p>激活重计算用计算换显存：前向时不保存中间结果，反向时重新计算。混合精度让参数和梯度以半精度存储。</p>
<p>零冗余优化器把优化器状态、梯度和参数切分到各个数据并行进程上，进一步降低每张卡的显存占用。</p>
</article></body></html>"""


# `mirror fetch` over the test web: no waits, no retries, one extraction process
QUICK_ARGS = ["--delay", "0", "--retries", "0", "--workers", "1"]


# --- the machine -------------------------------------------------------------------------------


def succeeds(*command: str) -> bool:
    return subprocess.run(command, capture_output=True).returncode == 0


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make `folder` read-only: chmod for a normal user, a read-only bind mount for root."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
        for path in modes:
            os.chmod(path, 0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                os.chmod(path, mode)
        return
    if not (succeeds("mount", "--bind", str(folder), str(folder)) and succeeds("mount", "-o", "remount,ro,bind", str(folder))):
        succeeds("umount", str(folder))
        pytest.skip("cannot make a read-only folder here: running as root without mount permission")
    try:
        yield
    finally:
        succeeds("umount", str(folder))


@contextmanager
def chromium():
    """Debian's chromium driven by Playwright, headless."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()
