"""Browser capture in Debian's chromium: JavaScript pages, challenges, lazy images, hostile pages.

One `mirror fetch` (one browser) over a loopback site serves most tests; each
asserts on the archive it left. Skipped where chromium is missing, failed under CI."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest
import sqlite_utils
from warcio.archiveiterator import ArchiveIterator

from mirror import warc
from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .browsersite import PAGES, TIMEOUT, Site
from .helpers import CHROMIUM, chromium_or_skip, extraction_pool, run_mirror

pytestmark = pytest.mark.slow


def fetch_into(root: Path, site: Site, browser: str) -> dict:
    seeds = root / "seeds"
    seeds.mkdir(parents=True)
    (seeds / "list.txt").write_text("\n".join(site.url(p) for p in PAGES) + "\n", encoding="utf-8")
    with Archive(root / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([seeds], base=root))
        started = time.monotonic()
        summary = run(
            archive, FetchOptions(delay=0, retries=0, workers=1, timeout=TIMEOUT, browser=browser, chromium=CHROMIUM), pool=extraction_pool()
        )
        return {"summary": summary, "seconds": time.monotonic() - started}


@pytest.fixture(scope="module")
def rendered(site, tmp_path_factory):
    """One run with --browser auto (one browser for the whole module's main run)."""
    chromium_or_skip()
    root = tmp_path_factory.mktemp("auto")
    outcome = fetch_into(root, site, "auto")
    db = sqlite_utils.Database(root / "archive" / "mirror.db")
    pages = {row["url"].rsplit("/", 1)[-1]: row for row in db.query("select * from pages")}
    return {**outcome, "root": root, "db": db, "pages": pages}


@pytest.fixture(scope="module")
def http_only(site, tmp_path_factory):
    root = tmp_path_factory.mktemp("never")
    fetch_into(root, site, "never")
    db = sqlite_utils.Database(root / "archive" / "mirror.db")
    return {row["url"].rsplit("/", 1)[-1]: row for row in db.query("select * from pages")}


def warc_records(root: Path) -> list[tuple[str, str, bytes]]:
    records = []
    for path in sorted((root / "archive" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.content_stream().read()))
    return records


@pytest.fixture(scope="module")
def always(site, tmp_path_factory):
    """`mirror fetch --browser always` as a real process: every HTML page rendered."""
    chromium_or_skip()
    root = tmp_path_factory.mktemp("always")
    (root / "seeds").mkdir()
    (root / "seeds" / "list.txt").write_text("\n".join(site.url(p) for p in PAGES) + "\n", encoding="utf-8")
    (root / "cookies.txt").write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\ts3cret\n")
    started = time.monotonic()
    result = run_mirror(
        "fetch",
        "--browser",
        "always",
        "--chromium",
        CHROMIUM,
        "--delay",
        "0",
        "--retries",
        "0",
        "--workers",
        "1",
        "--timeout",
        str(TIMEOUT),
        "--json",
        "--cookies",
        "cookies.txt",
        "--header",
        "X-Archive: mirror-test",
        "--user-agent",
        "MirrorTest/1.0",
        cwd=root,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    db = sqlite_utils.Database(root / "archive" / "mirror.db")
    pages = {row["url"].rsplit("/", 1)[-1]: row for row in db.query("select * from pages")}
    return {
        "root": root,
        "db": db,
        "pages": pages,
        "summary": json.loads(result.stdout),
        "seconds": time.monotonic() - started,
        "stderr": result.stderr,
    }


def test_single_page_app_is_archived_with_its_text(rendered, http_only):
    assert http_only["spa"]["status"] == "no_text"
    assert http_only["spa"]["capture"] == "http"
    spa = rendered["pages"]["spa"]
    assert spa["status"] == "archived", spa["render_note"]
    assert spa["capture"] == "browser"
    assert spa["title"] == "Rendered by JavaScript"
    assert "在线 softmax" in spa["text"] and "tiles that fit" in spa["text"]
    hits = [r["id"] for r in rendered["db"].query("select rowid as id from pages_fts where pages_fts match ?", ['"softmax"'])]
    assert spa["id"] in hits
    versions = list(rendered["db"].query("select how, state, warc_file, warc_offset from versions where page_url = ? order by id", [spa["url"]]))
    assert [(v["how"], v["state"]) for v in versions][-1] == ("browser", "first")  # the HTTP capture had no text
    assert (versions[-1]["warc_file"], versions[-1]["warc_offset"]) == (spa["warc_file"], spa["warc_offset"])


def test_rendered_dom_is_a_conversion_record_tied_to_the_http_capture(rendered):
    spa = rendered["pages"]["spa"]
    archive = rendered["root"] / "archive"
    with open(archive / "warc" / spa["warc_file"], "rb") as f:
        f.seek(spa["warc_offset"])
        record = next(iter(ArchiveIterator(io.BytesIO(f.read(spa["warc_length"])))))
    assert record.rec_type == "conversion"
    http_capture = (
        rendered["db"].execute("select warc_file, warc_offset, warc_length from attempts where url = ? order by id limit 1", [spa["url"]]).fetchone()
    )
    assert record.rec_headers.get_header("WARC-Refers-To") == warc.record_id(archive, warc.WarcLocation(*http_capture))
    assert b"Rendered by JavaScript" in record.content_stream().read()
    # the responses the browser received are there to replay the snapshot
    responses = {uri for kind, uri, _ in warc_records(rendered["root"]) if kind == "response"}
    assert spa["url"].replace("/spa", "/api/article.json") in responses


def test_javascript_challenge_is_archived_as_the_real_article(rendered, http_only):
    assert http_only["challenge"]["status"] == "failed"
    assert http_only["challenge"]["error"] == "blocked"
    page = rendered["pages"]["challenge"]
    assert page["status"] == "archived", page["render_note"]
    assert page["error"] is None
    assert page["title"] == "Behind the challenge"
    assert page["capture"] == "browser"
    assert page["http_status"] == 200


def test_run_summary_counts_a_challenge_the_browser_got_past_as_archived(rendered, always):
    statuses, errors = rendered["summary"].statuses, rendered["summary"].errors
    assert "failed" not in statuses and "blocked" not in errors, (statuses, errors)
    # the download and the members-only app (no cookies here) stay no_text; the others are articles
    assert dict(statuses) == {"archived": len(PAGES) - 2, "no_text": 2}
    assert always["summary"]["statuses"] == {"archived": len(PAGES) - 1, "no_text": 1}  # with the cookies
    assert always["summary"]["errors"] == {}


def test_download_page_ends_with_a_status_and_a_reason(rendered, site):
    page = rendered["pages"]["download"]
    assert page["status"] == "no_text"
    assert page["rendered_at"] is not None
    assert "download" in (page["render_note"] or ""), page["render_note"]


def test_application_shell_with_some_text_is_rendered(rendered, http_only):
    assert http_only["shell"]["status"] == "archived" and http_only["shell"]["word_count"] < 100  # thin, but not empty
    page = rendered["pages"]["shell"]
    assert (page["status"], page["capture"]) == ("archived", "browser")
    assert page["word_count"] > 3 * http_only["shell"]["word_count"]


def test_static_article_is_not_rendered_in_auto(rendered):
    page = rendered["pages"]["static"]
    assert page["status"] == "archived"
    assert page["capture"] == "http"
    assert page["rendered_at"] is None


def test_screenshot_shows_the_page(rendered):
    from PIL import Image, ImageStat

    spa = rendered["pages"]["spa"]
    assert spa["screenshot_warc_file"]
    _, png = warc.read_payload(
        rendered["root"] / "archive", warc.WarcLocation(spa["screenshot_warc_file"], spa["screenshot_warc_offset"], spa["screenshot_warc_length"])
    )
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == (1280, 800)
    assert ImageStat.Stat(image).stddev[0] > 5  # text on a white page, not a blank screen
    assert ImageStat.Stat(image).extrema[0][0] < 100  # some dark pixels: the heading


def test_always_renders_every_html_page(always):
    for name in ("spa", "challenge", "lazy", "never-settles", "dialogs", "static", "members", "shell"):
        assert always["pages"][name]["rendered_at"] is not None, name
        assert always["pages"][name]["screenshot_warc_file"], name
    assert sum(always["summary"]["rendered"].values()) == len(PAGES)
    said = [line for line in always["stderr"].splitlines() if line.startswith("browser ")]  # one line per render
    assert len(said) == len(PAGES) and any("archived from browser" in line and "/spa" in line for line in said)


def test_cookies_header_and_user_agent_apply_in_the_browser(always, site, rendered):
    assert rendered["pages"]["members"]["status"] == "no_text"  # without the cookie: nothing to read
    page = always["pages"]["members"]
    assert (page["status"], page["capture"], page["title"]) == ("archived", "browser", "Members only")
    # asked by the page's own fetch(), in the browser (a seed host's requests are made by the route, which
    # carries the user's --header values to that host only: its header names are lower case)
    asked = [{name.title(): value for name, value in h.items()} for h in site.headers["/api/members.json"]]
    sent = next(h for h in reversed(asked) if "X-Archive" in h)  # this run's (the `rendered` run sends none)
    assert "session=s3cret" in sent["Cookie"]
    assert sent["X-Archive"] == "mirror-test"
    assert sent["User-Agent"] == "MirrorTest/1.0"


def test_lazy_images_captured_in_always(always, site):
    responses = {uri for kind, uri, _ in warc_records(always["root"]) if kind == "response"}
    for i in range(3):
        assert site.url(f"/img/{i}.png") in responses
        # asked for by the browser when scrolled into view (the HTTP image fetcher asks for */*; with --header
        # the seed host's requests are made by the route, with the browser's Accept but no Sec-Fetch-Dest)
        asked = [{name.title(): value for name, value in h.items()} for h in site.headers[f"/img/{i}.png"]]
        assert any(h.get("Sec-Fetch-Dest") == "image" or "image/" in h.get("Accept", "") for h in asked)
    dom = next(body for kind, uri, body in warc_records(always["root"]) if kind == "conversion" and uri == site.url("/lazy"))
    assert b'src="/img/2.png"' in dom  # scrolled into view before the DOM was taken


def test_never_settling_page_is_cut_at_the_timeout(always):
    page = always["pages"]["never-settles"]
    assert page["status"] == "archived"
    assert page["render_error"] == "render_timeout"
    assert "never went idle" in page["render_note"]
    assert always["seconds"] < 600  # and the run went on to the end (a hang guard, not a speed test)


def test_dialogs_and_pop_ups_are_refused(always, site):
    page = always["pages"]["dialogs"]
    assert page["status"] == "archived"
    assert "2 dialogs dismissed" in page["render_note"]
    assert "pop-up" in page["render_note"]


def test_no_chromium_falls_back_to_http_with_one_line(tmp_path, site):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text(site.url("/static") + "\n", encoding="utf-8")
    env = {"PATH": str(Path(sys.executable).parent), "MIRROR_BROWSER": "auto", "MIRROR_CHROMIUM": ""}
    result = run_mirror("fetch", "--delay", "0", "--retries", "0", "--workers", "1", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("no browser:") == 1
    assert "no chromium found" in result.stderr


def test_bad_browser_options_are_refused(tmp_path):
    result = run_mirror("fetch", "--browser", "sometimes", cwd=tmp_path)
    assert result.returncode == 2 and "'sometimes' is" in result.stderr
    assert all(f"'{choice}'" in result.stderr for choice in ("auto", "always", "never"))
    result = run_mirror("fetch", "--chromium", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 2 and "not an executable chromium" in result.stderr


def test_datasette_serves_a_rendered_pages_screenshot(rendered):
    import asyncio

    from datasette.app import Datasette

    ds = Datasette([str(rendered["root"] / "archive" / "mirror.db")])
    spa, static = rendered["pages"]["spa"], rendered["pages"]["static"]

    def get(path):
        return asyncio.run(ds.client.get(path))

    shot = get(f"/-/mirror/screenshot/{spa['id']}")
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
    assert shot.content.startswith(b"\x89PNG")
    assert get(f"/-/mirror/screenshot/{static['id']}").status_code == 404  # never rendered
    reader = get(f"/-/mirror/page/{spa['id']}").text
    assert f'src="/-/mirror/screenshot/{spa["id"]}?full=1"' in reader
    snapshot = get(f"/-/mirror/snapshot/{spa['id']}")  # the rendered DOM, defused like any capture
    assert "Rendered by JavaScript" in snapshot.text and "<script" not in snapshot.text
    hits = get("/-/mirror/search?q=softmax").text
    assert f'class="thumb" src="/-/mirror/screenshot/{spa["id"]}"' in hits
    assert f'src="/-/mirror/screenshot/{static["id"]}"' not in hits
    home = get("/").text  # a thumbnail beside the article in its reading list and among the recent ones
    assert home.count(f'<a href="/-/mirror/page/{spa["id"]}"><img class="thumb" src="/-/mirror/screenshot/{spa["id"]}"') == 1
    assert (
        home.count(
            f'<a class="mirror-card-thumb" href="/-/mirror/page/{spa["id"]}" tabindex="-1" aria-hidden="true">'
            f'<img src="/-/mirror/screenshot/{spa["id"]}"'
        )
        == 1
    )  # its card among the recent ones
    assert f'src="/-/mirror/screenshot/{static["id"]}"' not in home
    import re

    shown = re.findall(r'class="thumb" src="([^"]*)"', home) + re.findall(r'class="mirror-card-thumb"[^>]*><img src="([^"]*)"', home)
    assert shown and set(shown) <= {f"/-/mirror/screenshot/{p['id']}" for p in rendered["pages"].values()}


def test_kill_9_during_a_render_loses_only_that_render(tmp_path, site):
    """The page is recorded once, after its render: a kill -9 once the render's DOM is written
    leaves the page's HTTP capture in the WARC files, and the next run renders it from there
    without asking the server for the page again."""
    chromium_or_skip()
    (tmp_path / "seeds").mkdir()
    spa_url = site.url("/spa?kill9")
    (tmp_path / "seeds" / "list.txt").write_text(f"{spa_url}\n{site.url('/static')}\n", encoding="utf-8")
    args = ["fetch", "--browser", "auto", "--chromium", CHROMIUM, "--delay", "0", "--retries", "0", "--workers", "1", "--timeout", str(TIMEOUT)]
    asked = site.hits.get("/spa", 0)
    killed = run_mirror(*args, cwd=tmp_path, env={"MIRROR_CRASH_AT": "render:1"}, timeout=300)
    assert killed.returncode == -9, killed.stderr
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    spa = next(db.query("select * from pages where url like '%/spa%'"))
    assert (spa["status"], spa["rendered_at"]) == ("pending", None)  # not recorded: its capture waits in the WARC files

    rerun = run_mirror(*args, cwd=tmp_path, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    spa = next(db.query("select * from pages where url like '%/spa%'"))
    assert (spa["status"], spa["capture"]) == ("archived", "browser")
    assert site.hits["/spa"] == asked + 1  # recovered from the capture, not fetched again
    assert "在线 softmax" in spa["text"]
    assert db.execute("select count(*) from pages_fts_docsize where id = ?", [spa["id"]]).fetchone()[0] == 1
    assert sum(1 for kind, _, _ in warc_records(tmp_path) if kind == "conversion") >= 1  # every file reads back


def test_a_page_that_hangs_the_browser_ends_and_the_browser_is_replaced(tmp_path, site, monkeypatch):
    chromium_or_skip()
    from mirror.browser import renderer

    monkeypatch.setattr(renderer, "GRACE", 8.0)  # the hang is told at --timeout + GRACE: 13 s, not 35
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text(f"{site.url('/busy')}\n{site.url('/static')}\n", encoding="utf-8")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([tmp_path / "seeds"], base=tmp_path))
        options = FetchOptions(delay=0, retries=0, workers=1, timeout=5, browser="always", chromium=CHROMIUM, browser_tabs=1)
        summary = run(archive, options, pool=extraction_pool())
    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    busy, static = (next(db.query("select * from pages where url = ?", [site.url(p)])) for p in ("/busy", "/static"))
    assert (busy["status"], busy["capture"], busy["render_error"]) == ("archived", "http", "render_hung")  # the HTTP capture stands
    assert "restarted" in busy["render_note"] and busy["rendered_at"] is not None
    assert static["rendered_at"] is not None and static["render_error"] is None  # rendered by the new browser
    assert static["screenshot_warc_file"]
    assert summary.rendered["render_hung"] == 1


def test_reindex_extracts_rendered_pages_from_their_dom(rendered, tmp_path):
    import shutil

    from mirror.fetch import reindex

    shutil.copytree(rendered["root"] / "archive", tmp_path / "archive")
    with Archive(tmp_path / "archive") as archive:
        reindex(archive, workers=1, pool=extraction_pool())
    spa = next(sqlite_utils.Database(tmp_path / "archive" / "mirror.db").query("select * from pages where url like '%/spa'"))
    assert (spa["status"], spa["capture"], spa["title"]) == ("archived", "browser", "Rendered by JavaScript")
