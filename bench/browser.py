"""Browser capture cost: `mirror fetch --browser always` over a loopback web of real pages.

Reports rendered pages per second (the render pass alone and the whole run,
against the same run with `--browser never`), the CPU a render adds (all processes,
chromium's included, against the same pages fetched with `--browser never`) and the browser's
peak memory:
the proportional set size (PSS, shared pages split fairly) of every process
under `mirror fetch` except itself and its extraction workers, sampled every
0.2 s from /proc. chromium asks no resolver: every request of a rendered page
is made by the run's client, through its gates and lookups.

    python bench/browser.py --pages 200 --tabs 2 --record
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measure, report
from loopback import corpus_pages, page_urls
from throughput import start_web

from mirror.browser import find_chromium
from mirror.browser.memory import descendants, is_browser, pss_mb


class BrowserMemory:
    """The browser's peak memory under a process (chromium and Playwright's driver, PSS), sampled
    every 0.2 s in a thread until the process ends, and when the browser first appeared."""

    def __init__(self, pid: int, every: float = 0.2):
        self.pid, self.every = pid, every
        self.peak_mb = 0.0
        self.first_seen: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set() and Path(f"/proc/{self.pid}").exists():
            browser = [p for p in descendants(self.pid) if is_browser(p)]
            if browser and self.first_seen is None:
                self.first_seen = time.monotonic()
            self.peak_mb = max(self.peak_mb, sum(pss_mb(p) for p in browser))
            self._done.wait(self.every)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def render_seconds(self, ended: float) -> float:
        """From the browser's start to `ended` (a time.monotonic()): the render pass."""
        return ended - self.first_seen if self.first_seen else 0.0


def chromium_option() -> list[str]:
    """`--chromium` for mirror fetch: Debian's chromium (it resolves no name itself: the run's client does)."""
    chromium = find_chromium()
    if chromium is None:
        sys.exit("error: no chromium found (apt install chromium, or MIRROR_CHROMIUM)")
    return ["--chromium", chromium]


def fetch(urls: list[str], folder: Path, browser: str, tabs: int, timeout: float) -> dict:
    (folder / "seeds").mkdir(parents=True)
    (folder / "seeds" / "urls.txt").write_text("\n".join(urls) + "\n")
    command = [
        sys.executable,
        "-m",
        "mirror",
        "fetch",
        "seeds",
        "--delay",
        "0",
        "--per-host",
        "4",
        "--no-images",
        "--retries",
        "1",
        "--timeout",
        str(timeout),
        "--browser",
        browser,
        "--browser-tabs",
        str(tabs),
        "--json",
        *(chromium_option() if browser != "never" else []),
    ]
    watched: list[BrowserMemory] = []
    started = time.monotonic()
    with open(folder / "summary.json", "w") as out:
        measured = measure(command, lambda pid: watched.append(BrowserMemory(pid)), cwd=folder, stdout=out, stderr=subprocess.DEVNULL)
    memory = watched[0]
    memory.stop()
    summary = json.loads((folder / "summary.json").read_text()) if measured.returncode == 0 else {}
    return {
        "wall": measured.wall,
        "cpu": measured.cpu,
        "summary": summary,
        "peak_mb": memory.peak_mb,
        "render_seconds": memory.render_seconds(started + measured.wall),
        "code": measured.returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--tabs", type=int, default=2, help="--browser-tabs")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/browser.jsonl")
    args = parser.parse_args()

    web, port, _ = start_web(args.hosts, args.latency_ms, 0, dns=False)  # images from the pages' own hosts only
    try:
        with tempfile.TemporaryDirectory(prefix="mirror-bench-browser-") as tmp:
            urls = page_urls(args.pages, args.hosts, port)
            plain = fetch(urls, Path(tmp) / "never", "never", args.tabs, args.timeout)
            rendered = fetch(urls, Path(tmp) / "always", "always", args.tabs, args.timeout)
    finally:
        web.kill()
    if rendered["code"] != 0 or plain["code"] != 0:
        sys.exit(f"error: mirror fetch failed (exit {rendered['code']} / {plain['code']})")
    renders = sum(rendered["summary"].get("rendered", {}).values())
    rows = [
        (
            "pages",
            f"{args.pages} ({len(corpus_pages())} distinct real pages, {args.hosts} hosts, {args.latency_ms:g} ms latency),"
            f" --browser-tabs {args.tabs}",
        ),
        ("--browser never", f"{args.pages / plain['wall']:.1f} pages/s ({plain['wall']:.1f} s)"),
        (
            "--browser always",
            f"{args.pages / rendered['wall']:.1f} pages/s overall ({rendered['wall']:.1f} s); "
            f"{renders} rendered: {json.dumps(rendered['summary'].get('rendered', {}))}",
        ),
        (
            "render pass",
            f"{renders / max(rendered['render_seconds'], 1e-9):.2f} rendered pages/s ({rendered['render_seconds']:.1f} s from browser start)",
        ),
        (
            "CPU a render adds",
            f"{(rendered['cpu'] - plain['cpu']) / max(renders, 1):.2f} s ({rendered['cpu']:.1f} s against {plain['cpu']:.1f} s with --browser never,"
            " all processes, chromium's start included)",
        ),
        ("browser peak memory", f"{rendered['peak_mb']:.0f} MB PSS (chromium and Playwright's driver)"),
    ]
    report("Browser capture", rows, args.record)


if __name__ == "__main__":
    main()
