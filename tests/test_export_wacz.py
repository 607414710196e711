"""`mirror export wacz` (issue 28 item 1): a WACZ the Webrecorder tools open.

From an archive fetched from real saved pages (../shared/corpus): `wacz validate` passes, and pywb
(a real `wayback` server on 127.0.0.1, the collection made by `wb-manager`) replays a Chinese
article from it byte for byte. From a small archive: `--seed` takes a list's pages with their
redirects, images and later versions and nothing of the other pages; bad input exits 2."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from .helpers import extraction_pool, run_mirror
from .webserver import PNG, article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return str(path)


def pages_jsonl(wacz: Path) -> list[dict]:
    with zipfile.ZipFile(wacz) as z:
        return [json.loads(line) for line in z.read("pages/pages.jsonl").decode("utf-8").splitlines()]


def records(wacz: Path) -> list:
    """(type, target URI, payload) of every record in the package's WARC files."""
    found = []
    with zipfile.ZipFile(wacz) as z:
        for name in (n for n in z.namelist() if n.startswith("archive/")):
            for record in ArchiveIterator(z.open(name)):
                found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.content_stream().read()))
    return found


@pytest.fixture(scope="module")
def corpus_wacz(corpus_archive, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wacz") / "corpus.wacz"
    result = run_mirror("export", "wacz", str(out), "--archive", str(corpus_archive), "--title", "语料", cwd=out.parent)
    assert result.returncode == 0, result.stderr
    assert "pages" in result.stderr and out.is_file()
    return out


@pytest.fixture
def wayback(tmp_path):
    """A pywb collection made from a WACZ, served on 127.0.0.1: (add(wacz) -> base URL)."""
    manager, server = tool("wb-manager"), tool("wayback")
    root = tmp_path / "pywb"
    root.mkdir()
    subprocess.run([manager, "init", "mirror"], cwd=root, check=True, capture_output=True, timeout=120)
    started = []

    def add(wacz: Path) -> str:
        added = subprocess.run([manager, "add", "--unpack-wacz", "mirror", str(wacz)], cwd=root, capture_output=True, text=True, timeout=300)
        assert added.returncode == 0, added.stdout + added.stderr
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        process = subprocess.Popen([server, "-p", str(port), "-b", "127.0.0.1"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(process)
        base = f"http://127.0.0.1:{port}/mirror"
        for _ in range(200):
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                return base
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError("pywb did not start")

    yield add
    for process in started:
        process.terminate()
        process.wait(timeout=10)


def test_the_package_validates_and_lists_each_article_with_its_text(corpus_wacz, corpus_archive):
    validated = subprocess.run([tool("wacz"), "validate", "-f", str(corpus_wacz)], capture_output=True, text=True, timeout=300)
    assert validated.returncode == 0 and "is valid" in validated.stdout, validated.stdout + validated.stderr
    with zipfile.ZipFile(corpus_wacz) as z:
        names = set(z.namelist())
        package = json.loads(z.read("datapackage.json"))
    assert {"datapackage.json", "datapackage-digest.json", "pages/pages.jsonl", "indexes/index.cdx.gz", "indexes/index.idx"} <= names
    assert package["title"] == "语料" and all(r["hash"].startswith("sha256:") for r in package["resources"])
    header, *entries = pages_jsonl(corpus_wacz)
    assert header["format"] == "json-pages-1.0" and header["hasText"] is True
    import sqlite3

    db = sqlite3.connect(corpus_archive / "mirror.db")
    archived = db.execute("select count(*) from pages where status = 'archived'").fetchone()[0]
    assert len(entries) == archived > 40
    chinese = [e for e in entries if "gne-zh" in e["url"]]
    assert chinese and all(e["title"] and len(e["text"]) > 100 for e in chinese)
    one = chinese[0]
    text = db.execute("select text from pages where url = ?", [one["url"]]).fetchone()[0]
    assert one["text"].startswith(text)  # what mirror extracted, which the player's search reads (and its words, issue 44)


@pytest.mark.slow
def test_pywb_replays_a_chinese_article_from_it(corpus_wacz, corpus_archive, wayback):
    base = wayback(corpus_wacz)
    entry = next(e for e in pages_jsonl(corpus_wacz)[1:] if "gne-zh" in e["url"])
    stamp = entry["ts"].replace("-", "").replace(":", "").replace("T", "")[:14]
    original = httpx.get(f"{base}/{stamp}id_/{entry['url']}", timeout=30)
    assert original.status_code == 200
    import sqlite3

    from mirror.store.queries import warc_location
    from mirror.warc import read_payload

    db = sqlite3.connect(corpus_archive / "mirror.db")
    db.row_factory = sqlite3.Row
    page = db.execute("select warc_file, warc_offset, warc_length from pages where url = ?", [entry["url"]]).fetchone()
    _, body = read_payload(corpus_archive, warc_location(page))
    assert original.content == body  # byte for byte what was captured
    replayed = httpx.get(f"{base}/{stamp}mp_/{entry['url']}", timeout=30)  # the player's rewritten page
    assert replayed.status_code == 200 and entry["title"] in replayed.text and "wombat" in replayed.text


@pytest.mark.slow
def test_a_reading_list_takes_its_redirects_images_and_versions_and_nothing_else(cli, tmp_path, web, wayback):
    web.add("/pic.png", PNG, content_type="image/png")
    kept = web.add("/kept", article("留下的文章", '<img src="/pic.png" alt="图"> 这篇在阅读清单里。'))
    moved = web.add("/old", b"", status=301, Location="/kept")
    other = web.add("/other", article("别的文章", "这篇不在清单里。"))
    (tmp_path / "list.md").write_text(f"- {moved}\n", encoding="utf-8")
    (tmp_path / "else.md").write_text(f"- {other}\n", encoding="utf-8")
    assert cli("fetch", "list.md", "else.md", *QUICK, "--header", "Authorization: Bearer SECRET-TOKEN").exit_code == 0
    web.add("/kept", article("留下的文章", '<img src="/pic.png" alt="图"> 这篇在阅读清单里，后来改过。'))
    assert cli("check", "--older-than", "0s", *QUICK).exit_code in (0, 1)
    result = cli("export", "wacz", "list.wacz", "--seed", "list.md")
    assert result.exit_code == 0, result.output
    wacz = tmp_path / "list.wacz"
    found = records(wacz)
    targets = {(kind, url) for kind, url, _ in found}
    assert ("response", moved) in targets and ("response", kept) in targets and ("response", web.url("/pic.png")) in targets
    assert found[0][0] == "warcinfo" and not any(kind == "request" for kind, _, _ in found)
    assert b"SECRET-TOKEN" not in gzip.decompress(
        zipfile.ZipFile(wacz).read(next(n for n in zipfile.ZipFile(wacz).namelist() if n.startswith("archive/")))
    )  # what the user sent stays home
    assert not any(url == other for _, url, _ in found)
    bodies = [body for kind, url, body in found if kind == "response" and url == kept]
    assert len(bodies) == 2 and "后来改过".encode() in bodies[1]  # both versions
    (entry,) = pages_jsonl(wacz)[1:]
    assert entry["title"] == "留下的文章" and "后来改过" in entry["text"]
    base = wayback(wacz)
    replayed = httpx.get(f"{base}/2mp_/{moved}", timeout=30, follow_redirects=True)  # the seed's address follows its redirect
    assert replayed.status_code == 200 and "后来改过" in replayed.text


def test_bad_requests_exit_2_and_leave_no_file(cli, tmp_path, web):
    assert cli("fetch", web.add("/one", article("一篇")), *QUICK).exit_code == 0
    nothing = cli("export", "wacz", "x.wacz", "--site", "example.com")
    assert nothing.exit_code == 2 and "no archived page matches" in nothing.output
    assert cli("export", "wacz", "x.wacz", "--since", "soon").exit_code == 2
    (tmp_path / "folder").mkdir()
    assert cli("export", "wacz", "folder").exit_code == 2
    assert cli("export", "wacz", "nowhere/x.wacz").exit_code == 2
    assert not (tmp_path / "x.wacz").exists() and not list(tmp_path.glob(".mirror-wacz-*"))
    assert "Traceback" not in nothing.output


def test_a_damaged_warc_file_is_read_up_to_the_damage(cli, tmp_path, web):
    url = web.add("/one", article("一篇", "完整的一篇。"))
    assert cli("fetch", url, *QUICK).exit_code == 0
    warc = next((tmp_path / "archive" / "warc").glob("*.warc.gz"))
    with open(warc, "ab") as f:
        f.write(gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999\r\n\r\ncut"))
    result = cli("export", "wacz", "x.wacz")
    assert result.exit_code == 0, result.output
    assert "is damaged" in result.output
    assert any(url == u for _, u, _ in records(tmp_path / "x.wacz"))
    shutil.rmtree(tmp_path / "archive")


def test_an_image_two_lists_show_goes_with_each(cli, tmp_path, web):
    web.add("/shared.png", PNG, content_type="image/png")
    first = web.add("/first", article("第一篇", '<img src="/shared.png" alt="图"> 两篇文章用同一张图。'))
    second = web.add("/second", article("第二篇", '<img src="/shared.png" alt="图"> 第二篇也用这张图。'))
    (tmp_path / "a.md").write_text(f"- {first}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"- {second}\n", encoding="utf-8")
    assert cli("fetch", "a.md", "b.md", *QUICK).exit_code == 0
    assert cli("export", "wacz", "b.wacz", "--seed", "b.md").exit_code == 0
    assert ("response", web.url("/shared.png")) in {(k, u) for k, u, _ in records(tmp_path / "b.wacz")}


def test_a_missing_warc_file_is_reported(cli, tmp_path, web):
    assert cli("fetch", web.add("/one", article("一篇")), *QUICK).exit_code == 0
    for warc in (tmp_path / "archive" / "warc").glob("*.warc.gz"):
        warc.unlink()
    result = cli("export", "wacz", "x.wacz")
    assert "1 capture the archive names was not found in its WARC files" in result.output


def test_a_lists_link_archived_under_another_list_goes_with_it(cli, tmp_path, web):
    """A reading list whose link redirects to a page another list archived first: its page is a
    duplicate of that one, and the list's package still holds the redirect and the article."""
    target = web.add("/target", article("目标文章", "两份清单都指向这篇文章。"))
    moved = web.add("/moved", b"", status=301, Location="/target")
    (tmp_path / "d.md").write_text(f"- {target}\n", encoding="utf-8")
    (tmp_path / "c.md").write_text(f"- {moved}\n", encoding="utf-8")
    assert cli("fetch", "d.md", *QUICK).exit_code == 0
    assert cli("fetch", "c.md", *QUICK).exit_code == 0
    result = cli("export", "wacz", "c.wacz", "--seed", "c.md")
    assert result.exit_code == 0, result.output
    targets = {(kind, url) for kind, url, _ in records(tmp_path / "c.wacz")}
    assert ("response", moved) in targets and ("response", target) in targets


def test_a_lists_export_reads_only_the_files_its_pages_were_written_to(cli, tmp_path, web):
    """Another run's WARC file is not read at all (here it is damaged: reading it would say so)."""
    mine = web.add("/mine", article("我的文章", "这篇在我的清单里。"))
    theirs = web.add("/theirs", article("别人的文章", "这篇在另一份清单里。"))
    (tmp_path / "mine.md").write_text(f"- {mine}\n", encoding="utf-8")
    assert cli("fetch", "mine.md", *QUICK).exit_code == 0
    before = set((tmp_path / "archive" / "warc").glob("*.warc.gz"))
    (tmp_path / "theirs.md").write_text(f"- {theirs}\n", encoding="utf-8")
    other_run = run_mirror("fetch", "theirs.md", *QUICK, cwd=tmp_path)  # another run: another process, its own file
    assert other_run.returncode == 0, other_run.stderr
    (other,) = set((tmp_path / "archive" / "warc").glob("*.warc.gz")) - before
    other.write_bytes(b"not a WARC file at all")
    result = cli("export", "wacz", "mine.wacz", "--seed", "mine.md")
    assert result.exit_code == 0 and "damaged" not in result.output, result.output
    assert ("response", mine) in {(kind, url) for kind, url, _ in records(tmp_path / "mine.wacz")}
    whole = cli("export", "wacz", "all.wacz")  # the whole archive's export does read it
    assert f"{other.name} is damaged" in whole.output and "1 capture the archive names was not found" in whole.output


def test_the_files_a_writer_filled_before_a_kept_one_are_found():
    """A redirect written just before a rotation is in the file before its capture's."""
    from mirror.warc.subset import _chain, _writers_files

    def _written_before(name: str, names: list[str]) -> list[str]:  # the files its writer filled before it, newest first
        return _chain(_writers_files(names), name)

    names = [
        "mirror-20261127100000-41-00001.warc.gz",
        "mirror-20261127100500-41-00002.warc.gz",
        "mirror-20261127101000-41-00003.warc.gz",
        "mirror-20261127110000-52-00001.warc.gz",
        "mirror-20261127120000-41-00001.warc.gz",
    ]
    assert _written_before(names[2], names) == [names[1], names[0]]
    assert _written_before(names[3], names) == []  # the first of its run
    assert _written_before("a-file-of-another-name.warc.gz", names) == []


def test_a_redirect_written_files_before_its_capture_goes_with_it(tmp_path, web):
    """In a busy run a slow page's redirect can be written several WARC files before its capture
    (the writer rotated meanwhile): a list's export looks back through its writer's files for it."""
    import random

    from mirror.fetch import FetchOptions, run
    from mirror.seeds import read_seeds
    from mirror.store import Archive

    rnd = random.Random(1)
    start = web.add("/r/start", b"", status=302, Location="/slow/final?s=2")
    fillers = [
        web.add(f"/fill/{i}", article(f"填充 {i}", " ".join("".join(rnd.choice("abcdefghij") for _ in range(6)) for _ in range(6000))))
        for i in range(12)
    ]
    (tmp_path / "a.md").write_text(f"- {start}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("".join(f"- {url}\n" for url in fillers), encoding="utf-8")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([tmp_path / "a.md", tmp_path / "b.md"], base=tmp_path))
        run(archive, FetchOptions(delay=0, per_host=8, retries=0, images=False, workers=1, warc_rotate_bytes=20_000), pool=extraction_pool())
    assert len(list((tmp_path / "archive" / "warc").glob("*.warc.gz"))) > 4
    import subprocess as sp

    result = sp.run(
        [sys.executable, "-m", "mirror", "export", "wacz", "a.wacz", "--seed", "a.md"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    found = {(kind, url) for kind, url, _ in records(tmp_path / "a.wacz")}
    assert ("response", start) in found and ("response", web.url("/slow/final?s=2")) in found
    assert not any((url or "").startswith(web.url("/fill/")) for _, url in found)


def test_sigterm_during_an_export_leaves_no_unfinished_files(corpus_archive, tmp_path):
    """`kill` (a service manager, a container stopping) stops an export as Ctrl-C does: its
    temporary folder is removed and no file is left under the name asked for."""
    import os
    import signal

    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "export", "wacz", str(tmp_path / "x.wacz"), "--archive", str(corpus_archive)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"},
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".mirror-wacz-*")) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.005)
    assert list(tmp_path.glob(".mirror-wacz-*")), "the export ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0 and "Traceback" not in stderr, stderr
    assert list(tmp_path.iterdir()) == []
