"""Read-only archives: search, show and serve open the archive read-only, so they work on a folder
nobody may write to (a backup disk, a shared copy) and never change the database; the commands
that write say it is read-only."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from mirror.extract.article import Extraction
from mirror.seeds import links_from_urls
from mirror.store import Archive, ArchiveError

from .helpers import integrity, page_outcomes, read_only, run_mirror, seed_folder

PAGES = [
    ("https://a.example/vram", "显存优化", "正文里提到了显存。" + "其他内容。" * 40),
    ("https://b.example/other", "Another page", "Nothing about memory here. " * 20),
]


@pytest.fixture
def read_only_archive(tmp_path):
    folder = tmp_path / "archive"
    with Archive(folder) as archive:
        archive.record_inventory(links_from_urls([url for url, _, _ in PAGES]))
        for url, title, text in PAGES:
            archive.save_extraction(url, Extraction(status="archived", kind="html", title=title, text=text, markdown=text))
    with read_only(folder):  # chmod -w for a normal user, a read-only bind mount for root
        yield folder


def _get(url: str, server: subprocess.Popen, wait: float = 60) -> str:
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read().decode("utf-8")
        except OSError:
            if server.poll() is not None:
                raise AssertionError(f"mirror serve exited: {server.stderr.read()}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_read_only_opening_cannot_write(read_only_archive):
    with Archive(read_only_archive, readonly=True) as archive:
        assert archive.db.execute("select count(*) from pages_fts_docsize").fetchone()[0] == len(PAGES)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            archive.db.execute("update pages set title = 'changed'")
    with pytest.raises(ArchiveError, match="no archive here"):
        Archive(read_only_archive / "missing", readonly=True)


def test_search_show_and_serve_work_on_a_read_only_archive(read_only_archive, tmp_path):
    before = (read_only_archive / "mirror.db").read_bytes()
    archive = ["--archive", str(read_only_archive)]

    result = run_mirror("search", "显存", "--json", *archive, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [hit["url"] for hit in json.loads(result.stdout)] == ["https://a.example/vram"]

    for key in ("https://a.example/vram", "1"):
        result = run_mirror("show", key, *archive, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "显存优化" in result.stdout and "正文里提到了显存" in result.stdout
    result = run_mirror("show", "https://nowhere.example/", *archive, cwd=tmp_path)
    assert result.returncode == 1 and "no such page" in result.stderr and "Traceback" not in result.stderr

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--port", str(port), *archive],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        page = _get(f"http://127.0.0.1:{port}/-/mirror/page/1", server)
        assert "显存优化" in page
        assert "https://a.example/vram" in _get(f"http://127.0.0.1:{port}/-/mirror/search?q=%E6%98%BE%E5%AD%98", server)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (read_only_archive / "mirror.db").read_bytes() == before


@pytest.mark.hostile
def test_read_only_archive_is_a_clear_error(tmp_path, calm_web):
    seed_folder(tmp_path, calm_web[:3])
    assert run_mirror("links", cwd=tmp_path).returncode == 0
    archive = tmp_path / "archive"
    with read_only(archive):
        for args in (["fetch", "--delay", "0"], ["links"], ["reindex"]):
            result = run_mirror(*args, cwd=tmp_path)
            assert result.returncode == 1, (args, result.stdout, result.stderr)
            assert "error:" in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
        # reading needs no writing: search works (tests/test_readonly.py covers show and serve)
        result = run_mirror("search", "显存", cwd=tmp_path)
        assert result.returncode == 0 and "no saved article matches" in result.stderr, result.stderr
    assert integrity(archive) == "ok"
    assert run_mirror("fetch", "--delay", "0", "--retries", "0", "--workers", "1", cwd=tmp_path).returncode == 0
    assert {status for status, _ in page_outcomes(archive).values()} <= {"archived", "no_text", "failed"}


def test_write_commands_on_a_read_only_archive_say_read_only(tmp_path):
    from .helpers import run_mirror

    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/a"]))
    with read_only(tmp_path / "archive"):
        for command in (["fetch", "https://example.com/b"], ["links", "https://example.com/c"], ["reindex"]):
            result = run_mirror(*command, cwd=tmp_path)
            assert result.returncode == 1 and "read-only" in result.stderr and "Traceback" not in result.stderr, result.stderr
