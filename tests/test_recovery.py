"""kill -9 at several moments, then re-run: responses already in WARC are recovered, not fetched again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import sqlite_utils

from .webserver import article

pytestmark = pytest.mark.hostile

PAGES = 12
CONCURRENCY = 3


def mirror(*args, cwd, env=None):
    full_env = {k: v for k, v in os.environ.items() if k not in ("MIRROR_ARCHIVE", "MIRROR_CRASH_AT")} | (env or {})
    return subprocess.run([sys.executable, "-m", "mirror", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=180)


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


@pytest.mark.parametrize(("point", "nth"), [("capture", 4), ("extract", 3), ("commit", 5), ("commit", 1)])
def test_each_page_is_fetched_once_plus_those_in_flight_at_the_kill(tmp_path, web, point, nth):
    urls = seeds(tmp_path, web)
    killed = mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": f"{point}:{nth}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    pending_after_kill = db.execute("select count(*) from pages where status = 'pending'").fetchone()[0]
    assert pending_after_kill > 0
    gets_before = sum(web.recorder.hits.values())

    rerun = mirror("fetch", *ARGS, "--json", cwd=tmp_path)
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


def test_a_wall_written_before_the_crash_is_fetched_again_not_recovered(tmp_path, web):
    web.add("/wall", b"<html><title>Just a moment...</title></html>", status=200)
    url = web.url("/wall")
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text(url + "\n")
    killed = mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": "capture:1"})
    assert killed.returncode == -signal.SIGKILL
    rerun = mirror("fetch", *ARGS, "--retry-failed", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    assert db["pages"].get(url)["error"] == "blocked"
    assert web.recorder.hits["/wall"] == 2


def test_a_run_over_one_list_records_what_a_crashed_run_fetched_for_the_others(tmp_path, web):
    """`mirror fetch other.md` after a kill -9: the pages of seeds/ that the killed run had
    captured are recorded from its WARC files (which this run closes), not fetched again later."""
    urls = seeds(tmp_path, web)
    killed = mirror("fetch", *ARGS, cwd=tmp_path, env={"MIRROR_CRASH_AT": "capture:4"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    captured_before = {path for path, n in web.recorder.hits.items() if n}
    other = web.add("/other", article("另一个列表", "这一段文字足够长，可以让抽取器把它当作正文。" * 6))
    (tmp_path / "other.md").write_text(other + "\n", encoding="utf-8")
    rerun = mirror("fetch", "other.md", *ARGS, "--json", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert __import__("json").loads(rerun.stdout)["recovered"] >= 1
    archived = {row["url"] for row in db.query("select url from pages where status in ('archived', 'duplicate')")}
    assert other in archived and len(archived & set(urls)) >= 1
    assert mirror("fetch", *ARGS, cwd=tmp_path).returncode == 0  # the rest of seeds/
    assert {row["status"] for row in db["pages"].rows} <= {"archived", "duplicate"}
    twice = [path for path in captured_before if web.recorder.hits[path] > 1]
    assert len(twice) <= CONCURRENCY, twice  # at most those in flight at the kill are fetched again
