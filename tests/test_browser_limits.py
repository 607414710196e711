"""The browser's limits: its memory (between pages and during one), and how its outcomes are counted."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import sqlite_utils

from mirror.browser.memory import descendants
from mirror.browser.renderer import Renderer

from .browsersite import TIMEOUT
from .helpers import CHROMIUM, chromium_or_skip, render_directly, run_mirror
from .webserver import article


def renderer(**options) -> Renderer:
    defaults = dict(tabs=1, timeout=TIMEOUT, user_agent="MirrorTest/1.0", cookies=[])
    return Renderer(CHROMIUM, **{**defaults, **options})


@pytest.mark.slow
def test_the_browser_is_restarted_when_it_takes_more_memory_than_allowed(site):
    chromium_or_skip()

    async def render_all(r: Renderer) -> list:
        try:
            return [await render_directly(r, site.url(path)) for path in ("/spa", "/static", "/shell")]
        finally:
            await r.close()

    low = renderer(memory_mb=1)  # any chromium takes more than 1 MB
    results = asyncio.run(render_all(low))
    assert low.restarts == 2  # after the first and the second page
    for result in results:
        assert result.error is None and result.dom and result.screenshot, result.notes
        assert any("over the 1 MB limit; it was restarted" in note for note in result.notes)
    high = renderer(memory_mb=100_000)
    results = asyncio.run(render_all(high))
    assert high.restarts == 0 and not any("restarted" in note for r in results for note in r.notes)


@pytest.mark.slow
def test_a_run_over_the_memory_limit_goes_on_with_every_page_recorded(tmp_path, site):
    chromium_or_skip()
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "list.txt").write_text("\n".join(site.url(p) for p in ("/spa", "/static", "/shell", "/lazy")) + "\n")
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
        cwd=tmp_path,
        env={"MIRROR_BROWSER_MEMORY_MB": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert sum(json.loads(result.stdout)["rendered"].values()) == 4
    pages = list(sqlite_utils.Database(tmp_path / "archive" / "mirror.db").query("select * from pages"))
    assert len(pages) == 4
    for page in pages:
        assert page["rendered_at"] and page["screenshot_warc_file"] and page["render_error"] is None, page["render_note"]
    # two tabs: the page that took a browser over the limit says so; the next two pages had a new browser
    assert sum("over the 1 MB limit; it was restarted" in (p["render_note"] or "") for p in pages) >= 2
    spa = next(p for p in pages if p["url"].endswith("/spa"))
    assert (spa["status"], spa["capture"]) == ("archived", "browser")


@pytest.mark.parametrize("value", ["lots", "-1"])
def test_a_bad_memory_limit_is_refused(tmp_path, value):
    chromium_or_skip()
    result = run_mirror("fetch", "--browser", "always", cwd=tmp_path, env={"MIRROR_BROWSER_MEMORY_MB": value})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"MIRROR_BROWSER_MEMORY_MB='{value}': not a number of megabytes" in result.stderr


@pytest.mark.slow
@pytest.mark.hostile
def test_a_page_that_takes_the_browser_past_its_bound_is_stopped(web):
    import asyncio

    from mirror.browser.renderer import Renderer

    from .helpers import CHROMIUM, chromium_or_skip, render_directly

    chromium_or_skip()
    # (it keeps changing its page, so that it is still being rendered when the memory is next looked at, however slow the machine)
    hog = web.add(
        "/hog",
        b"<html><body><p>hog</p><script>const kept = []; setInterval(() => {"
        b" const b = new ArrayBuffer(64 * 1024 * 1024); new Uint8Array(b).fill(7); kept.push(b);"
        b" document.body.append(String(kept.length)) }, 50)</script></body></html>",
    )
    calm = web.add("/calm", article("平静"))

    async def render():
        renderer = Renderer(CHROMIUM, tabs=1, timeout=30, user_agent="MirrorTest/1.0", cookies=[], memory_mb=200)
        try:
            return await render_directly(renderer, hog), await render_directly(renderer, calm)
        finally:
            await renderer.close()

    stopped, after = asyncio.run(render())
    assert stopped.error == "render_memory" and stopped.dom is None
    assert any("passed 1000 MB" in note for note in stopped.notes), stopped.notes
    assert after.error is None and b"\xe5\xb9\xb3\xe9\x9d\x99" in after.dom  # the next page gets a new browser


def test_a_render_starts_no_browser_ui_renderers(site):
    """Every context is a window, and chromium 14x loads two address-bar pop-ups (WebUI
    renderers) into each, which cost more CPU than the page's own render: they are turned off."""
    chromium_or_skip()

    seen: set[bytes] = set()

    async def watch() -> None:
        while True:
            for pid in descendants(os.getpid()):
                try:
                    seen.update(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split())  # a zygote's child sets its title
                except OSError:
                    pass
            await asyncio.sleep(0.05)

    async def render_watched(r: Renderer):
        watcher = asyncio.ensure_future(watch())
        try:
            return [await render_directly(r, site.url(path)) for path in ("/static", "/spa")]
        finally:
            watcher.cancel()
            await r.close()

    results = asyncio.run(render_watched(renderer()))
    assert all(result.error is None and result.dom for result in results), [r.notes for r in results]
    assert b"--type=renderer" in seen and b"--top-chrome-webui" not in seen, seen
