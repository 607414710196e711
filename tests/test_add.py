"""`mirror add`: pages the user's browser saved. Real SingleFile output (npm's single-file-cli
driving Debian's chromium) and real Chromium MHTML (CDP's Page.captureSnapshot) of a local page
are added, found by `mirror search` and shown in the reader with their images; a saved .html
needs its URL; what a file claims is recorded as what it is; a later check that meets a sign-in
wall keeps the added copy."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import httpx
import pytest

from .helpers import CHROMIUM, chromium_or_skip, run_mirror
from .member_site import CHROMIUM_QUIET, DEAD_PROXY, MEMBER_TEXT, MemberSite, Served, Site, noisy_png

PICTURE = noisy_png()
TEXT = "流水线并行把模型的不同层放到不同的设备上，每个设备只负责一部分计算。微批次依次送入流水线，气泡是主要开销。"
PAGE = f"""<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>流水线并行入门</title></head>
<body><article><h1>流水线并行入门</h1><p>{TEXT}</p>
<p>交错调度可以进一步压缩气泡：每个设备轮流处理多个模型分段，让等待的时间更短。这是第二段，讲的是调度。</p>
<figure><img src="/pictures/pipeline.png" alt="流水线示意图" width="48" height="48"><figcaption>流水线示意图</figcaption></figure>
<p>第三段：梯度累积与流水线并行配合使用时，需要注意每个微批次的大小与设备数量之间的关系。</p></article></body></html>"""


@pytest.fixture
def saved_site():
    """The page a user saves, on 127.0.0.4 (its picture beside it)."""

    def route(handler, method, body):
        if handler.path == "/post":
            return 200, [("Content-Type", "text/html; charset=utf-8")], PAGE.encode()
        if handler.path == "/pictures/pipeline.png":
            return 200, [("Content-Type", "image/png")], PICTURE
        return 404, [], b""

    site = Site("127.0.0.4", route)
    yield site
    site.close()


def _single_file_or_skip() -> str:
    found = os.environ.get("MIRROR_SINGLE_FILE") or shutil.which("single-file")
    if found is None:
        message = "npm's single-file-cli is not installed (npm install -g single-file-cli); .ci/run installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _add(archive: Path, *args: str) -> subprocess.CompletedProcess:
    return run_mirror("add", *args, "--archive", str(archive), cwd=archive.parent)


def _page(archive: Path, url: str) -> dict:
    with sqlite3.connect(archive / "mirror.db") as db:
        db.row_factory = sqlite3.Row
        return dict(db.execute("select * from pages where url = ?", [url]).fetchone())


def _search(archive: Path, words: str) -> list[dict]:
    found = run_mirror("search", words, "--json", "--archive", str(archive), cwd=archive.parent)
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)


def _reader_shows_picture(archive: Path, page_id: int) -> str:
    """The reader page's HTML, after checking that its picture is the archived one."""
    with Served(archive) as served:
        reader = httpx.get(f"{served.url}/-/mirror/page/{page_id}")
        assert reader.status_code == 200
        sources = [part.split('"')[0].replace("&amp;", "&") for part in reader.text.split('src="')[1:]]
        pictures = [src for src in sources if "/-/mirror/resource?" in src]
        assert pictures, reader.text
        image = httpx.get(served.url + pictures[0])
        assert image.status_code == 200 and image.content == PICTURE
        snapshot = httpx.get(f"{served.url}/-/mirror/snapshot/{page_id}")
        assert snapshot.status_code == 200 and "/-/mirror/resource?" in snapshot.text
        return reader.text


def test_singlefile_output_is_added_found_and_read_with_its_picture(tmp_path, saved_site):
    chromium_or_skip()
    single_file = _single_file_or_skip()
    saved = tmp_path / "saved.html"
    made = subprocess.run(
        [
            single_file,
            f"{saved_site.url}/post",
            str(saved),
            f"--browser-executable-path={CHROMIUM}",
            f"--browser-args={json.dumps(['--no-sandbox', *CHROMIUM_QUIET])}",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert made.returncode == 0 and saved.is_file(), made.stdout + made.stderr
    head = saved.read_text(encoding="utf-8")[:2000]
    assert "Page saved with SingleFile" in head and "data:image/png;base64," in saved.read_text(encoding="utf-8")
    archive = tmp_path / "archive"
    done = _add(archive, str(saved))
    assert done.returncode == 0, done.stderr
    url = f"{saved_site.url}/post"
    page = _page(archive, url)
    assert page["status"] == "archived" and page["source"] == "added"
    provenance = json.loads(page["provenance"])
    assert provenance["format"] == "SingleFile" and provenance["file"] == "saved.html" and provenance["saved_at"]
    assert [hit["url"] for hit in _search(archive, "气泡")] == [url]
    reader = _reader_shows_picture(archive, page["id"])
    assert "Added by you" in reader and "saved.html" in reader


def test_chromium_mhtml_is_added_with_its_parts(tmp_path, saved_site):
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_QUIET, proxy={"server": DEAD_PROXY, "bypass": "127.0.0.0/8"}
        )
        page = browser.new_page()
        page.goto(f"{saved_site.url}/post", wait_until="networkidle")
        mhtml = page.context.new_cdp_session(page).send("Page.captureSnapshot", {"format": "mhtml"})["data"]
        browser.close()
    saved = tmp_path / "流水线.mhtml"
    saved.write_text(mhtml, encoding="utf-8")
    archive = tmp_path / "archive"
    done = _add(archive, str(saved))
    assert done.returncode == 0, done.stderr
    url = f"{saved_site.url}/post"
    row = _page(archive, url)
    assert row["status"] == "archived" and row["source"] == "added"
    assert json.loads(row["provenance"])["format"] == "MHTML (Chromium)"
    with sqlite3.connect(archive / "mirror.db") as db:
        resources = db.execute("select url, status from resources where page_url = ?", [url]).fetchall()
    assert (f"{saved_site.url}/pictures/pipeline.png", "archived") in resources  # its own record, at its own URL
    assert [hit["url"] for hit in _search(archive, "微批次")] == [url]
    _reader_shows_picture(archive, row["id"])
    exported = run_mirror("export", "wacz", str(tmp_path / "added.wacz"), "--archive", str(archive), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert {url, f"{saved_site.url}/pictures/pipeline.png"} <= _wacz_targets(tmp_path / "added.wacz")  # replayable elsewhere


def _wacz_targets(path: Path) -> set[str]:
    import io
    import zipfile

    from warcio.archiveiterator import ArchiveIterator

    targets = set()
    with zipfile.ZipFile(path) as wacz:
        for name in wacz.namelist():
            if name.startswith("archive/"):
                for record in ArchiveIterator(io.BytesIO(wacz.read(name))):
                    if record.rec_type == "response":
                        targets.add(record.rec_headers.get_header("WARC-Target-URI"))
    return targets


def test_a_saved_html_needs_its_address(tmp_path):
    saved = tmp_path / "page.html"
    saved.write_text(PAGE, encoding="utf-8")
    archive = tmp_path / "archive"
    refused = _add(archive, str(saved))
    assert refused.returncode == 1 and "--url" in refused.stderr and "Traceback" not in refused.stderr
    done = _add(archive, str(saved), "--url", "https://example.org/posts/pipeline?utm_source=x")
    assert done.returncode == 0, done.stderr
    assert _page(archive, "https://example.org/posts/pipeline")["source"] == "added"  # its URL normalized, as every link's is


def test_files_that_are_not_pages_are_refused_with_a_reason(tmp_path):
    (tmp_path / "notes.txt").write_text("just some words", encoding="utf-8")
    (tmp_path / "empty.html").write_bytes(b"")
    done = _add(tmp_path / "archive", str(tmp_path / "notes.txt"), str(tmp_path / "empty.html"), str(tmp_path / "missing.html"))
    assert done.returncode != 0 and "Traceback" not in done.stderr


def test_a_file_claiming_another_sites_address_is_recorded_as_added_by_the_user(tmp_path):
    """Anyone can write `url: https://bank.example/…` into a file: the page is recorded as added
    from that file, and the reader says the address is the file's claim."""
    claimed = "https://bank.example/account/statement"
    saved = tmp_path / "statement.html"
    saved.write_text(
        f"<!DOCTYPE html> <html><!--\n Page saved with SingleFile \n url: {claimed} \n saved date: Sat Nov 28 2026 18:40:00 GMT+0100 (CET)\n-->"
        + PAGE.split('<html lang="zh">', 1)[1],
        encoding="utf-8",
    )
    archive = tmp_path / "archive"
    assert _add(archive, str(saved)).returncode == 0
    page = _page(archive, claimed)
    assert page["source"] == "added" and json.loads(page["provenance"])["saved_at"] == "2026-11-28T17:40:00+00:00"
    with sqlite3.connect(archive / "mirror.db") as db:
        assert db.execute("select how from versions where page_url = ?", [claimed]).fetchall() == [("added",)]
    with Served(archive) as served:
        reader = httpx.get(f"{served.url}/-/mirror/page/{page['id']}").text
    assert "Added by you" in reader and "statement.html" in reader and "the one the file gives" in reader


def test_a_check_that_meets_the_sign_in_wall_keeps_the_added_copy(tmp_path):
    """The member article, saved from a logged-in browser and added; a check without the login
    meets the sign-in wall: a `blocked` version, and the added copy stays the page."""
    with MemberSite() as site:
        saved = tmp_path / "member.html"
        saved.write_text(
            f'<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>显存优化笔记</title></head><body><article><h1>显存优化笔记</h1>'
            f"<p>{MEMBER_TEXT}</p><p>第二段：混合精度训练把大部分张量存成半精度，再用损失缩放避免梯度下溢。这样既省显存又能加快计算。</p></article></body></html>",
            encoding="utf-8",
        )
        archive = tmp_path / "archive"
        assert _add(archive, str(saved), "--url", site.article).returncode == 0
        checked = run_mirror(
            "check", "--older-than", "0", "--archive", str(archive), "--delay", "0", "--retries", "0", "--browser", "never", cwd=tmp_path
        )
        assert checked.returncode == 0, checked.stderr
        refreshed = run_mirror(
            "fetch", site.article, "--refresh", "--archive", str(archive), "--delay", "0", "--retries", "0", "--browser", "never", cwd=tmp_path
        )
        assert refreshed.returncode == 0, refreshed.stderr
    page = _page(archive, site.article)
    assert page["status"] == "archived" and page["source"] == "added" and MEMBER_TEXT[:20] in page["text"]
    with sqlite3.connect(archive / "mirror.db") as db:
        states = [row[0] for row in db.execute("select state from versions where page_url = ? order by id", [site.article])]
    assert states[0] == "first" and states[1:] and set(states[1:]) == {"blocked"}


def test_a_file_name_cannot_forge_warc_headers(tmp_path):
    """The file's name is written into its records' WARC headers: a line break in it stays inside one header."""
    from warcio.archiveiterator import ArchiveIterator

    saved = tmp_path / "page\r\nWARC-Type: revisit.html"
    saved.write_text(PAGE, encoding="utf-8")
    archive = tmp_path / "archive"
    assert _add(archive, str(saved), "--url", "https://example.org/named").returncode == 0
    kinds = []
    for warc in (archive / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "warcinfo":
                    continue  # (each file opens with one)
                kinds.append(record.rec_type)
                assert record.rec_headers.get_header("Mirror-Added-From") == "page??WARC-Type: revisit.html"
    assert kinds == ["response"]
