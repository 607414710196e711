"""`mirror fetch --ray` and `mirror reindex --ray` on a local Ray cluster (a head of 2 CPUs started
by `ray start`, as a process of its own, `RAY_ADDRESS` pointing at it), over a loopback web of 16
hosts with redirects, 404s, images and a flaky host: the same archive as a run in one process, the
per-host gaps across workers, a worker killed mid-run, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from warcio.archiveiterator import ArchiveIterator

from mirror._types import PageToFetch
from mirror.cluster.shards import Shards
from mirror.http.gate import server_key

from .helpers import assert_client_spaced, assert_spaced, free_port, run_mirror, wait_for
from .webserver import PNG, HostileServer, Recorder, article

HOSTS = 16
FLAKY = HOSTS - 1  # the host whose /flaky page answers 503 twice first
MARK = "MIRROR_TEST_RAY_HEAD"  # in the environment of every process of the test's head: what the tests may kill


def _ray_or_skip() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        message = "Ray is not installed (pip install -e '.[cluster]'); .ci/run installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


class Head(NamedTuple):
    address: str  # RAY_ADDRESS
    temp: Path  # its temporary folder, also the mark in its processes' environment


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A Ray head of 2 CPUs on 127.0.0.1, its temporary folder under pytest's: the address the
    drivers get as RAY_ADDRESS. `ray start --block` is this test's process (its own process group);
    it is stopped by its id, and takes the head's processes with it."""
    _ray_or_skip()
    temp = tmp_path_factory.mktemp("ray")
    port = free_port()
    ray = Path(sys.executable).parent / "ray"
    env = {**os.environ, MARK: str(temp), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [str(ray), "start", "--head", "--block", "--num-cpus", "2", "--port", str(port), "--node-ip-address", "127.0.0.1"]
        + ["--temp-dir", str(temp), "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory", str(200 * 2**20)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(temp / "head.log", "w"),
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: _answers(port) or head.poll() is not None, timeout=120), "the Ray head did not start"
        assert head.poll() is None, (temp / "head.log").read_text()
        yield Head(f"127.0.0.1:{port}", temp)
    finally:
        head.send_signal(signal.SIGTERM)  # (`ray start --block` stops the processes it started)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)  # its own process group: nothing but the head
            head.wait(timeout=10)
        for pid in _marked_processes(temp, ""):  # a worker left behind
            os.kill(pid, signal.SIGKILL)


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _marked_processes(temp: Path, title: str) -> list[int]:
    """Processes of the test's head (by the mark in their environment) whose command line starts with `title`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{MARK}={temp}".encode() in environ and cmdline.startswith(title):
            found.append(int(entry.name))
    return found


@pytest.fixture
def web():
    """16 loopback hosts: articles (one with an image), a redirect, a 404 on each, and a flaky page."""
    servers = [HostileServer(f"127.0.0.{h + 1}").__enter__() for h in range(HOSTS)]
    try:
        urls = []
        for h, server in enumerate(servers):
            for k in range(3):
                figure = f'<figure><img src="/img/{h}-{k}.png"></figure>' if k == 0 else ""
                body = article(f"第{h}号站 文章{k}", f"站点{h}的第{k}篇 word{h}x{k} 关于流水线并行的讨论。{figure}" * 3)
                urls.append(server.add(f"/a/{k}", body, content_type="text/html; charset=utf-8"))
                if k == 0:
                    server.add(f"/img/{h}-{k}.png", PNG, content_type="image/png")
            server.add("/moved", article(f"第{h}号站 搬家了", f"新地址的文章 moved{h} 内容足够长，可以当作正文。" * 3))
            urls.append(server.add("/old", b"", status=302, Location="/moved"))
            urls.append(server.url("/missing"))  # 404
        urls.append(servers[FLAKY].url("/flaky"))
        yield servers, urls
    finally:
        for server in servers:
            server.__exit__(None, None, None)


def _seeds(root: Path, urls: list[str]) -> None:
    (root / "seeds").mkdir(exist_ok=True)
    (root / "seeds" / "list.txt").write_text("".join(f"- {url}\n" for url in urls), encoding="utf-8")


def _reset(servers) -> None:
    """What the servers saw forgotten (the flaky page is flaky again); what they serve kept."""
    for server in servers:
        served, server.recorder = server.recorder.pages, Recorder()
        server.recorder.pages = served


def _fetch(root: Path, archive: str, *args: str, ray: Head | None = None, timeout: float = 300) -> dict:
    env = {"RAY_ADDRESS": ray.address, "RAY_AUTH_MODE": "disabled"} if ray else {}
    result = run_mirror("fetch", "--archive", archive, "--json", *args, cwd=root, env=env, timeout=timeout)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


FAST = ["--delay", "0", "--retries", "3", "--backoff", "0.05", "--workers", "2"]


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path / "mirror.db")
    db.row_factory = sqlite3.Row
    return db


def _pages(path: Path) -> dict[str, tuple]:
    rows = _db(path).execute("select url, status, http_status, error, final_url, title, text, word_count, same_as from pages")
    return {row["url"]: tuple(row)[1:] for row in rows}


def _resources(path: Path) -> dict[tuple[str, str], tuple]:
    rows = _db(path).execute("select page_url, url, status, http_status, content_type from resources")
    return {(row["page_url"], row["url"]): tuple(row)[2:] for row in rows}


def _searched(path: Path, queries: list[str]) -> dict[str, list[str]]:
    from mirror.search import search

    db = _db(path)
    return {query: sorted(hit.url for hit in search(db, query, limit=100)) for query in queries}


def _readable_warcs(path: Path) -> int:
    """Every WARC file read through by warcio, every page's capture read back; every file closed."""
    records = 0
    files = sorted((path / "warc").glob("*.warc.gz"))
    for file in files:
        with open(file, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                records += 1
    closed = {row[0] for row in _db(path).execute("select file from warc_files where closed_at is not null")}
    assert {f.name for f in files} <= closed, "a WARC file left open"
    from mirror.store.queries import warc_location
    from mirror.warc import read_payload

    for row in _db(path).execute("select warc_file, warc_offset, warc_length from pages where warc_file is not null"):
        read_payload(path, warc_location(dict(row)))
    return records


QUERIES = ["流水线", "站点3", "word7x1", "moved5", "搬家", "flaky"]


def test_shards_keep_a_servers_pages_together_and_balance_the_load():
    """Servers, not pages, are split: the largest first onto the least loaded shard; a server met
    later (an image host) goes to the least loaded one then, and stays there."""
    pages = [PageToFetch(f"http://h{h}.test/{i}") for h in range(6) for i in range(h + 1)]
    shards = Shards(3, pages, start=lambda shard, prefix: None, delay=0)
    owners = {server_key(page.url): shards.shard_of(page.url) for page in pages}
    assert {shards.shard_of(p.url) for p in pages if server_key(p.url) == "h5.test:80"} == {owners["h5.test:80"]}
    assert sorted(shards.load) == [7, 7, 7]  # 6+1, 5+2, 4+3
    new = shards.shard_of("http://cdn.test/x.png")
    assert shards.shard_of("http://cdn.test/y.png") == new and shards.load[new] == 8


def test_shards_need_ray(tmp_path):
    result = run_mirror("fetch", "--shards", "2", "http://127.0.0.1:9/x", cwd=tmp_path)
    assert result.returncode == 2 and "--shards goes with --ray" in result.stderr


def test_without_ray_installed_the_command_says_how_to_get_it(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # (an import of it fails, as where it is not installed)
    result = cli("fetch", "--ray", "http://127.0.0.1:9/x")
    assert result.exit_code == 1 and "pip install 'mirror[cluster]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_ray_run_makes_the_archive_a_local_run_makes(tmp_path, ray_head, web):
    """Same pages and statuses, texts, resources and search results; WARC files warcio reads
    through, every one closed; then `reindex --ray` gives the same texts again."""
    servers, urls = web
    _seeds(tmp_path, urls)
    local = _fetch(tmp_path, "local", *FAST)
    _reset(servers)
    on_ray = _fetch(tmp_path, "cluster", *FAST, "--ray", "--shards", "4", ray=ray_head)
    assert on_ray["cluster"] == {"cpus": 2, "shards": 4, "workers_died": 0}
    assert on_ray["statuses"] == local["statuses"] and on_ray["total"] == local["total"] == len(urls)
    pages = _pages(tmp_path / "local")
    assert _pages(tmp_path / "cluster") == pages
    assert {row[0] for row in pages.values()} == {"archived", "failed"}  # (and /old: archived at /moved)
    assert pages[servers[FLAKY].url("/flaky")][0] == "archived"
    assert pages[servers[0].url("/missing")][2] == "http_404"
    assert _resources(tmp_path / "cluster") == _resources(tmp_path / "local") != {}
    assert _searched(tmp_path / "cluster", QUERIES) == _searched(tmp_path / "local", QUERIES)
    assert _readable_warcs(tmp_path / "cluster") > 0
    # the workers wrote files of their own: one prefix per worker, none by the driver
    prefixes = {f.name.rsplit("-", 3)[0] for f in (tmp_path / "cluster" / "warc").glob("*.warc.gz")}
    assert 2 <= len(prefixes) <= 4

    env = {"RAY_ADDRESS": ray_head.address, "RAY_AUTH_MODE": "disabled"}
    reindexed = run_mirror("reindex", "--archive", "cluster", "--ray", cwd=tmp_path, env=env, timeout=300)
    assert reindexed.returncode == 0 and "Traceback" not in reindexed.stderr, reindexed.stderr
    assert _pages(tmp_path / "cluster") == pages
    assert _searched(tmp_path / "cluster", QUERIES) == _searched(tmp_path / "local", QUERIES)


def test_per_host_gaps_hold_across_workers(tmp_path, ray_head, web):
    """Each server is asked by one worker at a time: its pages' attempts start at least --delay
    apart on the workers' clocks, and the server sees them spaced so, however many workers."""
    servers, urls = web
    _seeds(tmp_path, urls)
    delay = 0.4
    _fetch(tmp_path, "archive", "--delay", str(delay), "--per-host", "2", "--retries", "3", "--backoff", "0", "--ray", "--shards", "4", ray=ray_head)
    for server in servers:
        assert_client_spaced(tmp_path / "archive" / "mirror.db", server.url("/"), delay)
        assert_spaced([t for _, t in server.recorder.starts], delay)


def _start(root: Path, archive: str, ray: Head, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"} | {"RAY_ADDRESS": ray.address, "RAY_AUTH_MODE": "disabled"}
    command = [sys.executable, "-m", "mirror", "fetch", "--archive", archive, "--json", "--ray", *args]
    return subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _recorded(path: Path) -> int:
    try:
        db = sqlite3.connect(path / "mirror.db", timeout=30)
        return db.execute("select count(*) from pages where status != 'pending'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_worker_killed_mid_run_loses_nothing(tmp_path, ray_head, web):
    """kill -9 of a fetching worker: its requests go to a new worker, every page is recorded once,
    the dead worker's WARC file is cut where it died and closed; the archive is the local run's."""
    servers, urls = web
    _seeds(tmp_path, urls)
    slow = ["--delay", "0.25", "--per-host", "1", "--retries", "3", "--backoff", "0"]
    local = _fetch(tmp_path, "local", *slow)
    _reset(servers)
    temp = ray_head.temp
    proc = _start(tmp_path, "cluster", ray_head, *slow, "--shards", "4")
    try:
        assert wait_for(lambda: _recorded(tmp_path / "cluster") >= 12, timeout=120)
        workers = _marked_processes(temp, "ray::FetchWorker")
        assert workers, "no fetching worker found"
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    summary = json.loads(stdout)
    assert summary["cluster"]["workers_died"] >= 1
    assert summary["statuses"] == local["statuses"]
    assert _pages(tmp_path / "cluster") == _pages(tmp_path / "local")
    db = _db(tmp_path / "cluster")
    assert db.execute("select count(*) from pages where status = 'pending'").fetchone()[0] == 0
    twice = db.execute("select page_url from versions group by page_url having count(*) > 1").fetchall()
    assert twice == [], "a page recorded twice"
    assert _readable_warcs(tmp_path / "cluster") > 0


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_ctrl_c_stops_the_clusters_work_and_a_rerun_resumes(tmp_path, ray_head, web, stop):
    """Ctrl-C, and SIGTERM (a Kubernetes pod stopping) the same way: everything finished is saved,
    the workers are stopped, nothing asks the web any more; the next run resumes."""
    servers, urls = web
    _seeds(tmp_path, urls)
    slow = ["--delay", "0.4", "--per-host", "1", "--retries", "3", "--backoff", "0"]
    temp = ray_head.temp
    proc = _start(tmp_path, "archive", ray_head, *slow, "--shards", "4")
    try:
        assert wait_for(lambda: _recorded(tmp_path / "archive") >= 6, timeout=120)
        proc.send_signal(signal.SIGINT if stop == "ctrl-c" else signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if stop == "ctrl-c" else -signal.SIGTERM) and "interrupted" in stderr and "Traceback" not in stderr, (
        proc.returncode,
        stderr,
    )
    assert wait_for(lambda: not _marked_processes(temp, "ray::FetchWorker"), timeout=30), "the cluster's workers go on"
    done = _recorded(tmp_path / "archive")
    assert 6 <= done < len(urls)
    hits = sum(sum(server.recorder.hits.values()) for server in servers)
    time.sleep(1)
    assert sum(sum(server.recorder.hits.values()) for server in servers) == hits  # nothing asks the web any more
    _fetch(tmp_path, "archive", *FAST, "--ray", "--shards", "4", ray=ray_head)  # (the rerun without the slowing)
    assert _recorded(tmp_path / "archive") == len(urls)
    assert _readable_warcs(tmp_path / "archive") > 0
