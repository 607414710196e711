"""The hostile web: faults, crashes, concurrent readers, full disks (`pytest -m hostile`).

Every hostile route runs on its own loopback address (127.0.0.2 ... 127.0.0.N)
so that each looks like a different host; every server stops by itself.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

from .webserver import GBK_ARTICLE, HostileServer

pytestmark = pytest.mark.hostile

TIMEOUT, RETRIES, BACKOFF = 2.0, 2, 0.1
# route -> (status, error categories allowed)
EXPECTED = {
    "/article/ok": ("archived", {None}),
    "/trickle": ("failed", {"timeout"}),
    "/never": ("failed", {"timeout"}),
    "/reset": ("failed", {"reset", "protocol"}),
    "/flaky": ("archived", {None}),
    "/retry-after": ("archived", {None}),
    "/missing": ("failed", {"http_404"}),
    "/gone": ("failed", {"http_410"}),
    "/redirect/3": ("archived", {None}),
    "/loop/a": ("failed", {"redirect_loop"}),
    "/big": ("failed", {"too_large"}),
    "/bomb": ("failed", {"too_large"}),
    "/png": ("no_text", {None}),
    "/empty": ("no_text", {None}),
    "/json": ("no_text", {None}),
    "/truncated": ("failed", {"protocol", "reset"}),
    "/gbk-as-utf8": ("archived", {None}),
    "/zhihu-403": ("failed", {"blocked"}),
    "/login": ("failed", {"blocked"}),
    "/pdf": ("archived", {None}),
}


def mirror(*args, cwd, env=None, preexec_fn=None, timeout=180):
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


def pages(archive: Path) -> dict[str, tuple]:
    db = sqlite_utils.Database(archive / "mirror.db")
    return {r["url"].split("/", 3)[3]: (r["status"], r["error"]) for r in db.query("select url, status, error from pages")}


def warc_records(archive: Path) -> int:
    n = 0
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                n += 1
    return n


def integrity(archive: Path) -> str:
    conn = sqlite3.connect(archive / "mirror.db")
    try:
        return conn.execute("pragma integrity_check").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def hostile_web():
    """One server per hostile route, each on its own loopback address."""
    with ExitStack() as stack:
        servers = {}
        for n, route in enumerate(EXPECTED, start=2):
            servers[route] = stack.enter_context(HostileServer(f"127.0.0.{n}", lifetime=300))
        yield servers


def test_fetch_over_the_hostile_web_finishes_in_bounded_time_and_memory(tmp_path, hostile_web):
    urls = [server.url(route) for route, server in hostile_web.items()]
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "hostile.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
    probe = (
        "import resource, subprocess, sys, time\n"
        "start = time.monotonic()\n"
        "code = subprocess.run([sys.executable, '-m', 'mirror', 'fetch', *sys.argv[1:]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(code, time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    args = [
        "--timeout",
        str(TIMEOUT),
        "--retries",
        str(RETRIES),
        "--backoff",
        str(BACKOFF),
        "--delay",
        "0",
        "--max-bytes",
        "1000000",
        "--workers",
        "2",
    ]
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    code, elapsed, peak_kb = result.stdout.split()
    assert int(code) == 0
    # each host has one URL: the worst is every attempt timing out, plus backoff and a Retry-After of 1 s
    backoffs = sum(min(BACKOFF * 2**i + BACKOFF / 2, 120) for i in range(RETRIES))
    bound = (RETRIES + 1) * TIMEOUT + backoffs + 1 + 15  # + start-up and extraction slack
    assert float(elapsed) < bound, f"took {float(elapsed):.1f} s, bound {bound:.1f} s"
    assert int(peak_kb) < 300 * 1024, f"peak RSS {int(peak_kb) // 1024} MB"

    got = pages(tmp_path / "archive")
    for route, (status, errors) in EXPECTED.items():
        url_key = next(k for k in got if k == route.lstrip("/"))
        assert got[url_key][0] == status, (route, got[url_key])
        assert got[url_key][1] in errors, (route, got[url_key])
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    failed = list(db.query("select url, error_message from pages where status = 'failed'"))
    assert all(r["error_message"] for r in failed)  # every failure says why
    gbk = next(db.query("select title, text from pages where url like '%gbk-as-utf8'"))
    assert gbk["title"] == "流水线并行" and "气泡是流水线并行的主要开销" in gbk["text"]
    assert GBK_ARTICLE.count("流水线") <= gbk["text"].count("流水线") + 2
    pdf = next(db.query("select kind, title from pages where url like '%/pdf'"))
    assert pdf == {"kind": "pdf", "title": "Pipeline parallelism"}
    assert warc_records(tmp_path / "archive") > 0
    assert integrity(tmp_path / "archive") == "ok"


# --- kill -9 at exact moments --------------------------------------------------

CALM = ["/article/a", "/article/b", "/article/c", "/article/d", "/article/e", "/article/f", "/pdf", "/png", "/missing", "/gbk-as-utf8"]


@pytest.fixture
def calm_web():
    with HostileServer("127.0.0.1", lifetime=300) as one, HostileServer("127.0.0.2", lifetime=300) as two:
        yield [(one if i % 2 else two).url(route) for i, route in enumerate(CALM)]


def seed_folder(root: Path, urls: list[str]) -> None:
    (root / "seeds").mkdir(parents=True)
    (root / "seeds" / "calm.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")


def outcome(archive: Path) -> dict:
    db = sqlite_utils.Database(archive / "mirror.db")
    rows = sorted((r["url"], r["status"], r["error"], bool(r["text"])) for r in db.query("select * from pages"))
    links = db.execute("select count(*), count(distinct seed || ':' || line || ':' || col) from links").fetchone()
    fts = db.execute("select count(*) from pages_fts_docsize").fetchone()[0]
    return {"pages": rows, "links": links, "indexed": fts}


@pytest.mark.parametrize(("point", "nth"), [("capture", 3), ("extract", 2), ("commit", 4)])
def test_kill_9_at_any_moment_then_rerun_equals_an_uninterrupted_run(tmp_path, calm_web, point, nth):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for root in (reference, crashed):
        seed_folder(root, calm_web)
    args = ["--delay", "0", "--retries", "0", "--workers", "1", "--no-images"]
    assert mirror("fetch", *args, cwd=reference).returncode == 0

    killed = mirror("fetch", *args, cwd=crashed, env={"MIRROR_CRASH_AT": f"{point}:{nth}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    midway = outcome(crashed / "archive")
    finished = [p for p in midway["pages"] if p[1] != "pending"]
    assert len(finished) < len(CALM)  # it really died half way
    for _url, status, _error, has_text in midway["pages"]:  # no half state: done, or still pending
        assert status in ("pending", "archived", "no_text", "failed")
        assert (status == "archived") == has_text

    rerun = mirror("fetch", *args, cwd=crashed)
    assert rerun.returncode == 0, rerun.stderr
    assert outcome(crashed / "archive") == outcome(reference / "archive")
    assert warc_records(crashed / "archive") >= 2 * len(CALM)
    assert integrity(crashed / "archive") == "ok"


# --- readers while a fetch writes ----------------------------------------------


def test_readers_never_see_database_is_locked(tmp_path):
    from datasette.app import Datasette

    from mirror.search import search

    with HostileServer("127.0.0.1", lifetime=300) as web:
        urls = [web.url(f"/slow/{i}?s=0.05") for i in range(60)]
        seed_folder(tmp_path, urls)
        assert mirror("links", cwd=tmp_path).returncode == 0
        fetch = subprocess.Popen(
            [sys.executable, "-m", "mirror", "fetch", "--delay", "0", "--per-host", "4", "--workers", "2"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        db_path = tmp_path / "archive" / "mirror.db"
        ds = Datasette([str(db_path)])
        reads = cli_runs = 0
        deadline = time.monotonic() + 60
        try:
            while fetch.poll() is None and time.monotonic() < deadline:
                response = asyncio.run(ds.client.get("/mirror/pages.json?_shape=array&_search=%E6%98%BE%E5%AD%98"))
                assert response.status_code == 200, response.text
                with sqlite_utils.Database(db_path) as db:
                    search(db, "显存")
                if reads % 10 == 0:
                    cli = mirror("search", "显存", "--json", cwd=tmp_path, timeout=60)
                    assert cli.returncode == 0 and "locked" not in cli.stderr, cli.stderr
                    cli_runs += 1
                reads += 1
        finally:
            fetch.wait(timeout=120)
        assert fetch.returncode == 0 and "locked" not in fetch.stderr
        assert reads >= 5 and cli_runs >= 1
        final = asyncio.run(ds.client.get("/mirror/pages.json?_shape=array&_search=%E6%98%BE%E5%AD%98&_size=max")).json()
        assert len(final) == 60


# --- full disk and read-only folder ------------------------------------------------


def _run(*command: str) -> bool:
    return subprocess.run(command, capture_output=True).returncode == 0


@contextmanager
def small_disk(folder: Path, size: str):
    """`folder` on a size-limited tmpfs (root), else None: the caller limits file sizes instead."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.environ.get("MIRROR_TEST_NO_MOUNT") or os.geteuid() != 0 or not _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
        yield None
        return
    try:
        yield folder
    finally:
        _run("umount", "-l", str(folder))


@contextmanager
def read_only(folder: Path):
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
    if not (_run("mount", "--bind", str(folder), str(folder)) and _run("mount", "-o", "remount,ro,bind", str(folder))):
        _run("umount", str(folder))
        pytest.skip("cannot make a read-only folder here: running as root without mount permission")
    try:
        yield
    finally:
        _run("umount", str(folder))


def test_full_disk_is_a_clear_error_and_nothing_is_corrupted(tmp_path, calm_web):
    seed_folder(tmp_path, calm_web)
    archive = tmp_path / "archive"
    args = ["--delay", "0", "--retries", "0", "--workers", "1", "--no-images"]
    with small_disk(archive, "4m") as disk:
        assert mirror("links", cwd=tmp_path).returncode == 0
        if disk is None:  # no tmpfs: let no file grow much past its size now
            limit = max(p.stat().st_size for p in archive.iterdir() if p.is_file()) + 12_000

            def limited():
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        else:
            filler = archive / "filler"  # leave room for a few pages only
            free = shutil.disk_usage(archive).free
            filler.write_bytes(b"\0" * max(free - 40_000, 0))
            limited = None
        full = mirror("fetch", *args, cwd=tmp_path, preexec_fn=limited)
        assert full.returncode == 1, full.stderr
        assert "cannot use the archive" in full.stderr and "Traceback" not in full.stderr, full.stderr
        assert integrity(archive) == "ok"
        if disk is not None:
            (archive / "filler").unlink()  # free some space
        again = mirror("fetch", *args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "pending" not in {status for status, _ in pages(archive).values()}
        assert warc_records(archive) >= 2 * len(CALM)
        assert integrity(archive) == "ok"


def test_read_only_archive_is_a_clear_error(tmp_path, calm_web):
    seed_folder(tmp_path, calm_web[:3])
    assert mirror("links", cwd=tmp_path).returncode == 0
    archive = tmp_path / "archive"
    with read_only(archive):
        for args in (["fetch", "--delay", "0"], ["links"], ["reindex"]):
            result = mirror(*args, cwd=tmp_path)
            assert result.returncode == 1, (args, result.stdout, result.stderr)
            assert "error:" in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
        # reading needs no writing: search works (tests/test_readonly.py covers show and serve)
        result = mirror("search", "显存", cwd=tmp_path)
        assert result.returncode == 0 and "no saved article matches" in result.stderr, result.stderr
    assert integrity(archive) == "ok"
    assert mirror("fetch", "--delay", "0", "--retries", "0", "--workers", "1", cwd=tmp_path).returncode == 0
    assert {status for status, _ in pages(archive).values()} <= {"archived", "no_text", "failed"}
