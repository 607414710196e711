"""`mirror check` of unchanged pages against a plain conditional GET loop, and what a check adds to
the archive.

A loopback web of real saved pages (bench/loopback.py, 8 hosts) is archived once with `mirror
fetch` (not measured), then checked with `mirror check --older-than 0`: every page answers with
the bytes it had, so each check is a WARC revisit record (no second body) and a `versions` row.
The same URLs are then fetched by a plain loop of conditional GETs (httpx, the same concurrency and
per-host limit, If-Modified-Since sent, bodies read and dropped): what a user's cron script would do.
Reported: time per page of both, CPU per page, and the bytes the check added to the archive per page
(WARC files and the database, after a WAL checkpoint), against the goal of under 1 KB a page.

    python bench/check.py --pages 10000 --record
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import report
from loopback import page_urls
from throughput import measured_run, mirror_command, start_web

GOAL_BYTES = 1024  # added to the archive per unchanged page


def archive_bytes(archive: Path) -> tuple[int, int]:
    """(bytes of the WARC files, bytes of the database with its WAL checkpointed)."""
    with sqlite3.connect(archive / "mirror.db") as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    warc = sum(p.stat().st_size for p in (archive / "warc").glob("*.warc.gz"))
    db = sum(p.stat().st_size for p in archive.glob("mirror.db*"))
    return warc, db


async def _loop(urls: list[str], concurrency: int, per_host: int) -> int:
    """Conditional GETs of every URL, `concurrency` at once and `per_host` per host; returns how many answered."""
    import httpx

    hosts: dict[str, asyncio.Semaphore] = {}
    overall = asyncio.Semaphore(concurrency)
    answered = 0

    async def one(client: httpx.AsyncClient, url: str) -> None:
        nonlocal answered
        host = httpx.URL(url).host
        gate = hosts.setdefault(host, asyncio.Semaphore(per_host))
        async with gate, overall:
            try:
                response = await client.get(url, headers={"If-Modified-Since": "Thu, 01 Jan 2026 00:00:00 GMT"})
                await response.aread()
                answered += response.status_code in (200, 304)
            except httpx.HTTPError:
                pass

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30, trust_env=False) as client:
        await asyncio.gather(*(one(client, url) for url in urls))
    return answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/check.jsonl")
    parser.add_argument("--loop", type=Path, help=argparse.SUPPRESS)  # (the baseline, in a process of its own)
    args = parser.parse_args()
    if args.loop:
        urls = args.loop.read_text().split()
        print(asyncio.run(_loop(urls, args.concurrency, args.per_host)))
        return

    web, port, _ = start_web(args.hosts, 0.0, 0, dns=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            urls = page_urls(args.pages, args.hosts, port)
            env = {**os.environ, "MIRROR_BROWSER": "never"}
            started = time.monotonic()
            setup = subprocess.run(mirror_command(urls, folder, args, images=True), cwd=folder, env=env, capture_output=True, text=True)
            if setup.returncode != 0:
                sys.exit(f"error: mirror fetch failed: {setup.stderr[-2000:]}")
            fetched = time.monotonic() - started
            warc_before, db_before = archive_bytes(folder / "archive")
            output = folder / "check.json"
            command = [
                sys.executable,
                "-m",
                "mirror",
                "check",
                "--older-than",
                "0",
                "--delay",
                str(args.delay),
                "--per-host",
                str(args.per_host),
                "--concurrency",
                str(args.concurrency),
                "--retries",
                "1",
                "--json",
            ]
            with open(output, "w") as out:
                checked = measured_run(command, web.pid, cwd=folder, env=env, stdout=out)
            if checked.measured.returncode != 0:
                sys.exit("error: mirror check failed")
            states = json.loads(output.read_text())["states"]
            warc_after, db_after = archive_bytes(folder / "archive")
            (folder / "urls.txt").write_text("\n".join(urls))
            loop = [
                sys.executable,
                __file__,
                "--loop",
                str(folder / "urls.txt"),
                "--concurrency",
                str(args.concurrency),
                "--per-host",
                str(args.per_host),
            ]
            with open(folder / "loop.out", "w") as out:
                baseline = measured_run(loop, web.pid, stdout=out)
            answered = int((folder / "loop.out").read_text().strip() or 0)
    finally:
        web.terminate()
    n = args.pages
    added = (warc_after - warc_before + db_after - db_before) / n
    rows = [
        ("pages (archived first in, s)", f"{n} ({fetched:.1f})"),
        ("what the check found", ", ".join(f"{v} {k}" for k, v in sorted(states.items()))),
        ("mirror check: ms/page wall, CPU", f"{1000 * checked.measured.wall / n:.2f}, {1000 * checked.measured.cpu / n:.2f}"),
        (
            "conditional GET loop: ms/page wall, CPU",
            f"{1000 * baseline.measured.wall / n:.2f}, {1000 * baseline.measured.cpu / n:.2f} ({answered} answered)",
        ),
        ("check / loop, wall", f"{checked.measured.wall / baseline.measured.wall:.2f}x"),
        ("bytes added per page: WARC + database", f"{(warc_after - warc_before) / n:.0f} + {(db_after - db_before) / n:.0f} = {added:.0f}"),
        (f"goal: under {GOAL_BYTES} bytes a page", "met" if added < GOAL_BYTES else "NOT met"),
        ("rest of the machine busy (cores): check, loop", f"{checked.others:.2f}, {baseline.others:.2f}"),
    ]
    report("mirror check of unchanged pages", rows, args.record)


if __name__ == "__main__":
    main()
