"""Issue 44 item 6: `mirror export bookmarks FILE.html`, the Netscape bookmark file every browser
and bookmark service imports: reading lists and their sections as folders, titles, tags (TAGS)
and dates (ADD_DATE). `mirror links FILE.html` reads it back unchanged, and so does Firefox's own
bookmarks.html import (firefox-esr, headless, where it is installed)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import links_json

PINS = [
    {"href": "https://example.com/rope", "description": "Rotary embeddings", "tags": "ml attention", "time": "2024-01-02T03:04:05Z"},
    {"href": "https://example.org/税收", "description": "税收优惠 & <政策>", "tags": "财政,政策 解读", "time": "2023-05-06T07:08:09Z"},
    {"href": "javascript:alert(1)", "description": "a script", "tags": "", "time": "2023-01-01T00:00:00Z"},
]
MARKDOWN = """# 读书清单

## 注意力
- [FlashAttention](https://arxiv.org/abs/2205.14135)
- https://github.com/Dao-AILab/flash-attention

## Systems
- [Pipelines](https://example.net/pipelines)
"""


def fields(links: list[dict]) -> list[tuple]:
    return [(link["url"], link["title"], link["section"], link["tags"], link["added"]) for link in links]


@pytest.fixture
def lists(cli, tmp_path):
    (tmp_path / "pins.json").write_text(json.dumps(PINS, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "reading.md").write_text(MARKDOWN, encoding="utf-8")
    recorded = cli("links", "pins.json", "reading.md", "--json")
    assert recorded.exit_code == 0, recorded.output
    return links_json(recorded)


def test_one_reading_list_is_read_back_unchanged(cli, tmp_path, lists):
    result = cli("export", "bookmarks", "pins.html", "--seed", "pins.json")
    assert result.exit_code == 0, result.output
    assert "2 bookmarks in 1 reading list, 1 link with no web address left out" in result.output
    text = (tmp_path / "pins.html").read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE NETSCAPE-Bookmark-file-1>") and 'ADD_DATE="1704164645"' in text and 'TAGS="ml,attention"' in text
    assert "javascript:" not in text and "&lt;政策&gt;" in text
    back = links_json(cli("links", "pins.html", "--json", "--archive", "other"))
    want = [link for link in lists if link["seed"] == "pins.json" and link["url"].startswith("https:")]
    assert fields(back) == fields(want)


def test_every_list_is_a_folder_its_sections_folders_inside(cli, tmp_path, lists):
    assert cli("export", "bookmarks", "all.html").exit_code == 0
    back = links_json(cli("links", "all.html", "--json", "--archive", "other"))
    web = [link for link in lists if link["url"].startswith("http")]
    # a link keeps its section; one without is in its list's folder (named by the list's # heading, else its file)
    expected = [
        (u, t, s or ("pins" if seed == "pins.json" else "读书清单"), tags, a)
        for (u, t, s, tags, a), seed in zip(fields(web), [x["seed"] for x in web], strict=True)
    ]
    got = {(u, t, s, tags) for u, t, s, tags, _ in fields(back)}
    assert got == {(u, t or u, s, tags) for u, t, s, tags, _ in expected}
    text = (tmp_path / "all.html").read_text(encoding="utf-8")
    assert text.index("<H3>读书清单</H3>") < text.index("<H3>注意力</H3>") < text.index("<H3>Systems</H3>")


def test_a_missing_reading_list_is_a_clear_error(cli, lists):
    result = cli("export", "bookmarks", "x.html", "--seed", "nope.md")
    assert result.exit_code == 2 and "no reading list 'nope.md'" in result.output


FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")


def test_firefox_imports_the_file_with_folders_titles_tags_and_dates(cli, tmp_path, lists):
    """Firefox reads a bookmarks.html into a new profile's places.sqlite on its first start when
    `browser.places.importBookmarksHTML` is set: its own parser, run headless."""
    if FIREFOX is None:
        pytest.skip("firefox-esr is not installed (apt-get install firefox-esr)")
    assert cli("export", "bookmarks", "all.html").exit_code == 0
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "user.js").write_text(
        "\n".join(
            [
                'user_pref("browser.places.importBookmarksHTML", true);',
                f'user_pref("browser.bookmarks.file", "{tmp_path / "all.html"}");',
                'user_pref("browser.shell.checkDefaultBrowser", false);',
                'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
                'user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);',
            ]
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "MOZ_HEADLESS": "1", "HOME": str(tmp_path)}
    command = [FIREFOX, "--headless", "--no-remote", "--profile", str(profile), "about:blank"]
    firefox = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # places.sqlite is made, then the file imported into it within a second of the profile's start;
        # Firefox holds it locked while it runs, so it is read once Firefox has stopped
        deadline = time.monotonic() + 90
        while not (profile / "places.sqlite").exists() and time.monotonic() < deadline and firefox.poll() is None:
            time.sleep(0.5)
        time.sleep(10)
    finally:
        firefox.terminate()
        try:
            firefox.wait(30)
        except subprocess.TimeoutExpired:
            firefox.kill()
            firefox.wait()
    imported = _bookmarks(profile / "places.sqlite")
    by_url = {row["url"]: row for row in imported}
    rope = by_url["https://example.com/rope"]
    assert rope["title"] == "Rotary embeddings" and rope["folder"] == "pins" and rope["added"] == 1704164645
    assert set(rope["tags"]) == {"ml", "attention"}
    assert by_url["https://example.org/%E7%A8%8E%E6%94%B6"]["title"] == "税收优惠 & <政策>"
    assert by_url["https://arxiv.org/abs/2205.14135"]["folder"] == "注意力" and by_url["https://example.net/pipelines"]["folder"] == "Systems"


def _bookmarks(places: Path) -> list[dict]:
    conn = sqlite3.connect(f"file:{places}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "select p.url, b.title, parent.title, b.dateAdded / 1000000 from moz_bookmarks b join moz_places p on p.id = b.fk "
            "join moz_bookmarks parent on parent.id = b.parent "
            "where b.type = 1 and parent.parent != (select id from moz_bookmarks where guid = 'tags________')"
        ).fetchall()
        tags: dict[str, list[str]] = {}
        for url, tag in conn.execute(
            "select p.url, tag.title from moz_bookmarks b join moz_places p on p.id = b.fk join moz_bookmarks tag on tag.id = b.parent "
            "where tag.parent = (select id from moz_bookmarks where guid = 'tags________')"
        ):
            tags.setdefault(url, []).append(tag)
    finally:
        conn.close()
    return [{"url": u, "title": t, "folder": f, "added": a, "tags": tags.get(u, [])} for u, t, f, a in rows]
