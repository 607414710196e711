"""Helpers for the tests that read an archive as a user does: `mirror fetch` of pages served on
127.0.0.x, `mirror serve` as a real process, and Debian's chromium (through Playwright) with the
screenshots of each page kept under the test's own tmp folder (`artifacts/`)."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

from .helpers import CHROMIUM, chromium_or_skip, run_mirror


def fetch(folder: Path, *sources: str, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`mirror fetch` as a real process in `folder`, quick and without a browser; it must succeed."""
    result = run_mirror("fetch", *sources, "--delay", "0", "--retries", "0", "--workers", "1", *options, cwd=folder, env={"MIRROR_BROWSER": "never"})
    assert result.returncode == 0, result.stderr
    return result


@contextmanager
def browser_page(artifacts: Path, width: int = 1280, height: int = 900):
    """A page of a headless chromium; `shot(page, name)` below keeps a full-page screenshot."""
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def shot(page, artifacts: Path, name: str) -> Path:
    """A full-page screenshot of `page`, kept as `artifacts/<name>.png` (and checked not blank)."""
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    from PIL import Image

    with Image.open(path) as image:
        assert image.convert("L").getextrema()[0] < 200, f"{name}: a blank screenshot"
    return path
