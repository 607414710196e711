"""CPU per page of `mirror fetch`, with and without images, this tree against an older commit.

On a shared machine wall times mean little, but CPU seconds per page compare fairly when the
two trees run interleaved on the same loopback web (bench/throughput.py's: real pages, images
on their own hosts, a third dead, a tenth hanging). Reported per variant: CPU ms per page of
the whole run (the fetcher and its extraction workers), of the fetcher's process alone, and
wall; "images cost" is images-on minus `--no-images`.

    python bench/fetch_cpu.py --against main --pages 300 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import report
from loopback import page_urls
from throughput import mirror_command, process_cpu, start_web

ROOT = Path(__file__).resolve().parents[1]


def checkout(ref: str, where: Path) -> Path:
    """The `src/` of `ref`, exported from git (the working tree is never touched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where / "src"


def one_run(src: Path, urls: list[str], folder: Path, images: bool, args: argparse.Namespace) -> tuple[float, float, float]:
    """(CPU s of everything, CPU s of the fetcher process alone, wall s)."""
    command = mirror_command(urls, folder, args, images)
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=folder, env={**os.environ, "PYTHONPATH": str(src)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    own = 0.0
    while True:  # the fetcher's own CPU is its last reading from /proc before it exits
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        try:
            own = process_cpu(process.pid)
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.05)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: mirror fetch failed with {src}")
    return usage.ru_utime + usage.ru_stime, own, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="main", help="the git commit to compare with")
    parser.add_argument("--this", default=None, help="a git commit to measure instead of the working tree")
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--image-hosts", type=int, default=30)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/fetch_cpu.jsonl")
    args = parser.parse_args()

    web, port, _ = start_web(args.hosts, args.latency_ms, args.image_hosts, dns=False)
    urls = page_urls(args.pages, args.hosts, port)
    results: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mirror-fetch-cpu-") as tmp:
            (Path(tmp) / "a").mkdir()
            this = checkout(args.this, Path(tmp)) if args.this else ROOT / "src"
            trees = {"this": this, args.against: checkout(args.against, Path(tmp) / "a")}
            for round_ in range(args.rounds):
                for label, src in trees.items():
                    for images in (True, False):
                        folder = Path(tmp) / f"{label}-{images}-{round_}"
                        results.setdefault((label, images), []).append(one_run(src, urls, folder, images, args))
    finally:
        web.kill()
        web.wait()

    n = args.pages
    rows = []
    for label in (args.against, "this"):
        med = {images: [statistics.median(v[i] for v in results[(label, images)]) for i in range(3)] for images in (True, False)}
        for images in (True, False):
            cpu, main_cpu, wall = med[images]
            rows.append(
                (
                    f"{label}, {'images' if images else '--no-images'}",
                    f"{cpu / n * 1000:.1f} ms CPU/page (fetcher process {main_cpu / n * 1000:.1f}), wall {wall:.1f} s",
                )
            )
        rows.append(
            (f"{label}, images cost", f"{(med[True][0] - med[False][0]) / n * 1000:+.1f} ms CPU/page, wall {med[True][2] / med[False][2] - 1:+.0%}")
        )
    rows.append(("runs", f"{args.pages} pages, latency {args.latency_ms:g} ms, medians of {args.rounds} interleaved rounds"))
    report("fetch CPU A/B", rows, args.record)


if __name__ == "__main__":
    main()
