"""Crashes and stops: kill -9 at exact moments, then a re-run equals an uninterrupted run and
fetches again only what was in flight; Ctrl-C and SIGTERM stop cleanly and resume; a second
fetch on one archive refuses; a full disk is a clear error that corrupts nothing."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .helpers import (
    CALM,
    count,
    db_of,
    extraction_pool,
    integrity,
    page_outcomes,
    run_mirror,
    seed_folder,
    start_fetch,
    succeeds,
    wait_for,
    warc_records,
)
from .webserver import article


def seed_file(tmp_path, web, n, seconds=0.15, route="/slow"):
    lines = [f"slow page {i}\n{web.url(f'{route}/{i}?s={seconds}')}\n" for i in range(n)]
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text("\n".join(lines), encoding="utf-8")


def outcome(archive: Path) -> dict:
    db = sqlite_utils.Database(archive / "mirror.db")
    rows = sorted((r["url"], r["status"], r["error"], bool(r["text"])) for r in db.query("select * from pages"))
    links = db.execute("select count(*), count(distinct seed || ':' || line || ':' || col) from links").fetchone()
    fts = db.execute("select count(*) from pages_fts_docsize").fetchone()[0]
    return {"pages": rows, "links": links, "indexed": fts}


@contextmanager
def small_disk(folder: Path, size: str):
    """`folder` on a size-limited tmpfs (root), else None: the caller limits file sizes instead."""
    folder.mkdir(parents=True, exist_ok=True)
    if (
        os.environ.get("MIRROR_TEST_NO_MOUNT")
        or os.geteuid() != 0
        or not succeeds("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    ):
        yield None
        return
    try:
        yield folder
    finally:
        succeeds("umount", "-l", str(folder))


PAGES = 12


CONCURRENCY = 3


def seeds(root, web) -> list[str]:
    urls = []
    for i in range(PAGES):
        body = article(f"恢复测试 {i}", "这一段文字足够长，可以让抽取器把它当作正文。" * 6)
        urls.append(web.add(f"/r/{i}", body, content_type="text/html; charset=utf-8"))
    urls.append(web.add("/start", b"", status=302, Location=web.url("/r/0")))  # a redirect chain, recovered too
    (root / "seeds").mkdir(parents=True)
    (root / "seeds" / "list.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
    return urls


ARGS = ["--delay", "0", "--retries", "0", "--workers", "1", "--no-images", "--concurrency", str(CONCURRENCY), "--per-host", str(CONCURRENCY)]


@pytest.mark.hostile
@pytest.mark.parametrize("kill_after", [1, 6, 14])
def test_kill_9_then_rerun_completes(tmp_path, web, kill_after):
    web.recorder.answer_first = kill_after  # the other pages wait for the kill: the run dies half way however fast it goes
    seed_file(tmp_path, web, 20, route="/held")
    db = tmp_path / "archive" / "mirror.db"
    proc = start_fetch(tmp_path, "--delay", "0", "--per-host", "4")
    try:
        assert wait_for(lambda: count(db, "select count(*) from pages where status = 'archived'") >= kill_after, timeout=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        web.recorder.release.set()
    assert proc.returncode == -signal.SIGKILL
    assert count(db, "select count(*) from pages where status = 'archived'") == kill_after
    rerun = run_mirror("fetch", "--delay", "0", "--per-host", "4", "--json", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert count(db, "select count(*) from pages") == 20
    assert count(db, "select count(*) from pages where status = 'archived'") == 20
    assert count(db, "select count(*) from links") == 20
    assert count(db, "pragma integrity_check") == "ok"
    assert len(warc_records(tmp_path / "archive")) >= 40
    # every page's pointer reads back
    with Archive(tmp_path / "archive") as archive:
        from mirror.warc import WarcLocation, read_payload

        for row in archive.db.query("select warc_file, warc_offset, warc_length from pages"):
            _, body = read_payload(tmp_path / "archive", WarcLocation(*row.values()))
            assert b"held /held/" in body


@pytest.mark.hostile
def test_truncated_warc_tail_is_repaired_on_rerun(tmp_path, web):
    seed_file(tmp_path, web, 3, seconds=0)
    assert run_mirror("fetch", "--delay", "0", cwd=tmp_path).returncode == 0
    archive = tmp_path / "archive"
    (warc_file,) = (archive / "warc").glob("*.warc.gz")
    data = warc_file.read_bytes()
    # simulate a kill -9 mid-write: a half-written record, and no "closed" mark
    warc_file.write_bytes(data + data[:100])
    conn = sqlite3.connect(archive / "mirror.db")
    conn.execute("delete from warc_files")
    conn.commit()
    conn.close()
    result = run_mirror("fetch", "--delay", "0", cwd=tmp_path)
    assert result.returncode == 0
    assert "repaired" in result.stderr
    assert warc_file.read_bytes() == data
    assert len(warc_records(archive)) == 7  # its warcinfo and three pages' responses and requests


@pytest.mark.hostile
@pytest.mark.parametrize(("point", "nth"), [("capture", 3), ("extract", 2), ("commit", 4)])
def test_kill_9_at_any_moment_then_rerun_equals_an_uninterrupted_run(tmp_path, calm_web, point, nth):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for root in (reference, crashed):
        seed_folder(root, calm_web)
    args = ["--delay", "0", "--retries", "0", "--workers", "1", "--no-images"]
    assert run_mirror("fetch", *args, cwd=reference).returncode == 0

    killed = run_mirror("fetch", *args, cwd=crashed, env={"MIRROR_CRASH_AT": f"{point}:{nth}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    midway = outcome(crashed / "archive")
    finished = [p for p in midway["pages"] if p[1] != "pending"]
    assert len(finished) < len(CALM)  # it really died half way
    for _url, status, _error, has_text in midway["pages"]:  # no half state: done, or still pending
        assert status in ("pending", "archived", "no_text", "failed")
        assert (status == "archived") == has_text

    rerun = run_mirror("fetch", *args, cwd=crashed)
    assert rerun.returncode == 0, rerun.stderr
    assert outcome(crashed / "archive") == outcome(reference / "archive")
    assert len(warc_records(crashed / "archive")) >= 2 * len(CALM)
    assert integrity(crashed / "archive") == "ok"


@pytest.mark.hostile
@pytest.mark.parametrize(("point", "nth"), [("capture", 4), ("extract", 3), ("commit", 5), ("commit", 1)])
def test_each_page_is_fetched_once_plus_those_in_flight_at_the_kill(tmp_path, web, point, nth):
    urls = seeds(tmp_path, web)
    killed = run_mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": f"{point}:{nth}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    pending_after_kill = db.execute("select count(*) from pages where status = 'pending'").fetchone()[0]
    assert pending_after_kill > 0
    gets_before = sum(web.recorder.hits.values())

    rerun = run_mirror("fetch", *ARGS, "--json", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    statuses = dict(db.execute("select status, count(*) from pages group by 1").fetchall())
    assert statuses == {"archived": len(urls) - 1, "duplicate": 1}  # /start ends at /r/0: one article, two links
    assert db.execute("select same_as from pages where url = ?", [urls[-1]]).fetchone()[0] == urls[0]
    assert db.execute("select count(*) from pages_fts_docsize").fetchone()[0] == len(urls) - 1
    # every page's text is searchable and points at a readable capture
    assert db.execute("select count(*) from pages where text like '%恢复测试%' and warc_file is not null").fetchone()[0] == len(urls)

    total_gets = sum(web.recorder.hits.values())
    recovered = __import__("json").loads(rerun.stdout)["recovered"]
    assert recovered >= 1
    # at most those in flight at the kill are fetched twice
    assert total_gets - (len(urls) + 1) <= CONCURRENCY, dict(web.recorder.hits)
    assert all(n <= 2 for n in web.recorder.hits.values())
    assert total_gets > gets_before or pending_after_kill == recovered


@pytest.mark.hostile
def test_a_wall_written_before_the_crash_is_fetched_again_not_recovered(tmp_path, web):
    web.add("/wall", b"<html><title>Just a moment...</title></html>", status=200)
    url = web.url("/wall")
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text(url + "\n")
    killed = run_mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": "capture:1"})
    assert killed.returncode == -signal.SIGKILL
    rerun = run_mirror("fetch", *ARGS, "--retry-failed", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    assert db["pages"].get(url)["error"] == "blocked"
    assert web.recorder.hits["/wall"] == 2


@pytest.mark.hostile
def test_a_run_over_one_list_records_what_a_crashed_run_fetched_for_the_others(tmp_path, web):
    """`mirror fetch other.md` after a kill -9: the pages of seeds/ that the killed run had
    captured are recorded from its WARC files (which this run closes), not fetched again later."""
    urls = seeds(tmp_path, web)
    killed = run_mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": "capture:4"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    captured_before = {path for path, n in web.recorder.hits.items() if n}
    other = web.add("/other", article("另一个列表", "这一段文字足够长，可以让抽取器把它当作正文。" * 6))
    (tmp_path / "other.md").write_text(other + "\n", encoding="utf-8")
    rerun = run_mirror("fetch", "other.md", *ARGS, "--json", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert __import__("json").loads(rerun.stdout)["recovered"] >= 1
    archived = {row["url"] for row in db.query("select url from pages where status in ('archived', 'duplicate')")}
    assert other in archived and len(archived & set(urls)) >= 1
    assert run_mirror("fetch", *ARGS, cwd=tmp_path).returncode == 0  # the rest of seeds/
    assert {row["status"] for row in db["pages"].rows} <= {"archived", "duplicate"}
    twice = [path for path in captured_before if web.recorder.hits[path] > 1]
    assert len(twice) <= CONCURRENCY, twice  # at most those in flight at the kill are fetched again


def test_stylesheets_of_pages_an_interrupted_run_saved_are_fetched_by_the_next(tmp_path, web):
    web.add("/style.css", b"body { color: #333 }", content_type="text/css")
    page = article("样式").replace(b"<head>", b'<head><link rel="stylesheet" href="/style.css">')
    url = web.add("/styled", page)
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url]))
        run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
    db = db_of(tmp_path)
    assert db["resources"].get((url, web.url("/style.css")))["status"] == "archived"
    # what a stop between the page and its resources leaves: the page recorded, its resources not
    db.execute("delete from resources")
    db.execute("update pages set resources_at = null")
    db.conn.commit()
    with Archive(tmp_path / "archive") as archive, archive.lock():
        summary = run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
    assert summary.images_resumed == 1
    assert web.recorder.hits["/style.css"] == 2
    assert db["resources"].get((url, web.url("/style.css")))["status"] == "archived"
    assert db["pages"].get(url)["resources_at"] is not None


@pytest.mark.hostile
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm", "sigterm twice"])
def test_ctrl_c_stops_cleanly_and_resumes(tmp_path, web, stop):
    """Ctrl-C, and `kill` (SIGTERM: a service manager, a container stopping) the same way; a
    second SIGTERM while it stops ends it at once (it hung, waiting for its workers)."""
    web.recorder.answer_first = 2  # the other pages wait until the run is stopped
    seed_file(tmp_path, web, 12, route="/held")
    db = tmp_path / "archive" / "mirror.db"
    proc = start_fetch(tmp_path, "--delay", "0", "--per-host", "2")
    try:
        assert wait_for(lambda: count(db, "select count(*) from pages where status = 'archived'") >= 2, timeout=60)
        proc.send_signal(signal.SIGINT if stop == "ctrl-c" else signal.SIGTERM)
        if stop == "sigterm twice":
            time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        web.recorder.release.set()
    assert proc.returncode == (130 if stop == "ctrl-c" else -signal.SIGTERM)  # (cleaned up, then ended as SIGTERM ends it)
    assert "Traceback" not in stderr
    if stop != "sigterm twice":
        assert "interrupted" in stderr
    done = count(db, "select count(*) from pages where status = 'archived'")
    assert done == 2
    assert count(db, "select count(*) from pages where status not in ('archived', 'pending')") == 0
    assert run_mirror("fetch", "--delay", "0", cwd=tmp_path).returncode == 0
    assert count(db, "select count(*) from pages where status = 'archived'") == 12


@pytest.mark.hostile
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_does_not_wait_for_the_extractions_under_way(tmp_path, web, presses):
    """Pages whose extraction takes seconds each: a Ctrl-C stopped the run only once the workers had
    finished every extraction queued to them (10 s here for 5 MB pages), and a second Ctrl-C then
    left it hanging at exit. Their results would not be recorded (the next run recovers the
    captures): the workers are stopped at once."""
    paragraph = "<p>" + "A long paragraph of article text about distributed training and memory. " * 20 + "</p>\n"
    body = ("<html><head><title>Big</title></head><body><article><h1>Big page</h1>" + paragraph * 4000 + "</article></body></html>").encode()
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "big.md").write_text("".join(f"- {web.add(f'/big/{i}', body)}\n" for i in range(8)), encoding="utf-8")
    proc = start_fetch(tmp_path, "--delay", "0", "--browser", "never")
    warc = tmp_path / "archive" / "warc"
    assert wait_for(lambda: sum(f.stat().st_size for f in warc.glob("*.warc.gz")) > 0 and len(warc_records(tmp_path / "archive")) >= 6, timeout=60)
    time.sleep(0.5)  # extractions under way, more queued to the workers
    proc.send_signal(signal.SIGINT)
    if presses == 2:
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr, (proc.returncode, stderr)
    assert time.monotonic() - start < 6, "waited for the extractions"


def test_a_ctrl_c_while_a_worker_starts_is_not_lost(tmp_path):
    """The extraction pool keeps a starting worker from the terminal's Ctrl-C; a Ctrl-C in that
    moment was ignored by the parent too, and the run went on to its end (seen on a busy machine)."""
    script = (
        "import os, signal, concurrent.futures.process as cfp\n"
        "from mirror.extract.pool import extraction_pool\n"
        "real = cfp.ProcessPoolExecutor._spawn_process\n"
        "def spawn(self):\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while a worker starts\n"
        "    real(self)\n"
        "cfp.ProcessPoolExecutor._spawn_process = spawn\n"
        "try:\n"
        "    with extraction_pool(1) as pool:\n"
        "        print(pool.submit(abs, -7).result(), flush=True)\n"
        "    print('lost')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.split()[-1] == "interrupted" and "Traceback" not in done.stderr, done.stdout + done.stderr


def test_ctrl_c_prints_the_clean_line_only(tmp_path, web):
    urls = [web.url(f"/slow/{n}?s=3") for n in range(6)] + [web.add(f"/fast{n}", article(f"快 {n}")) for n in range(4)]
    (tmp_path / "list.md").write_text("\n".join(urls) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "fetch", "list.md", "--delay", "0", "--workers", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"},
    )
    deadline = time.monotonic() + 60
    db = tmp_path / "archive" / "mirror.db"
    while time.monotonic() < deadline:  # the workers are up once a page is archived
        time.sleep(0.2)
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute("select count(*) from pages where status = 'archived'").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole process group
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted:" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


@pytest.mark.hostile
def test_second_fetch_on_the_same_archive_refuses(tmp_path, web):
    seed_file(tmp_path, web, 1, seconds=0)
    (tmp_path / "archive").mkdir()
    with Archive(tmp_path / "archive") as archive, archive.lock():
        result = run_mirror("fetch", cwd=tmp_path)
    assert result.returncode == 1
    assert "another mirror fetch" in result.stderr and "Traceback" not in result.stderr
    assert run_mirror("fetch", "--delay", "0", cwd=tmp_path).returncode == 0


@pytest.mark.hostile
def test_full_disk_is_a_clear_error_and_nothing_is_corrupted(tmp_path, calm_web):
    seed_folder(tmp_path, calm_web)
    archive = tmp_path / "archive"
    args = ["--delay", "0", "--retries", "0", "--workers", "1", "--no-images"]
    with small_disk(archive, "4m") as disk:
        assert run_mirror("links", cwd=tmp_path).returncode == 0
        if disk is None:  # no tmpfs: let no file grow much past its size now
            limit = max(p.stat().st_size for p in archive.iterdir() if p.is_file()) + 12_000

            def limited():
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        else:
            filler = archive / "filler"  # leave room for a few pages only
            free = shutil.disk_usage(archive).free
            filler.write_bytes(b"\0" * max(free - 40_000, 0))
            limited = None
        full = run_mirror("fetch", *args, cwd=tmp_path, preexec_fn=limited)
        assert full.returncode == 1, full.stderr
        assert "cannot use the archive" in full.stderr and "Traceback" not in full.stderr, full.stderr
        assert integrity(archive) == "ok"
        if disk is not None:
            (archive / "filler").unlink()  # free some space
        again = run_mirror("fetch", *args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "pending" not in {status for status, _ in page_outcomes(archive).values()}
        assert len(warc_records(archive)) >= 2 * len(CALM)
        assert integrity(archive) == "ok"
