"""CPU per page of `mirror fetch`, with and without images, this tree against an older commit.

On a shared machine wall times mean little, and even CPU seconds drift: this VM does the same
work at speeds ±20% apart a few minutes apart, so two trees run one after the other differ by
as much as the code does. Here the two trees run *at the same time*, on the same loopback web
(bench/throughput.py's: real pages, images on their own hosts, a third dead, a tenth hanging),
so the machine's drift falls on both (but for the last seconds of the slower one), and which
starts first alternates by round. The figure is the ratio of this tree's CPU per page to the
other's, round by round. The absolute figures (CPU ms per page of the whole run, the fetcher
and its extraction workers, and of the fetcher's process alone; wall) are of two runs sharing
the machine, higher than a run alone: compare them only with each other. "Images cost" is
images-on minus `--no-images`, runs one after the other, so it drifts as such.

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
from collections.abc import Callable
from functools import partial
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


class Running:
    """One `mirror fetch` under way: its process, and its fetcher's CPU as last read from /proc."""

    def __init__(self, label: str, src: Path, urls: list[str], folder: Path, images: bool, args: argparse.Namespace) -> None:
        folder.mkdir(parents=True)  # (a label may hold a slash: origin/main)
        command = mirror_command(urls, folder, args, images)
        self.label, self.folder, self.start, self.own = label, folder, time.monotonic(), 0.0
        env = {**os.environ, "PYTHONPATH": str(src)}
        with open(folder / "stderr.txt", "wb") as stderr:
            self.process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        self.result: tuple[float, float, float] | None = None

    def poll(self) -> bool:
        """Whether it has ended; until then the fetcher's own CPU is read again (its last reading
        before it exits is its figure). Ended: (CPU s of everything, of the fetcher alone, wall s)."""
        if self.result is None:
            pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            if not pid:
                try:
                    self.own = process_cpu(self.process.pid)
                except (OSError, IndexError, ValueError):
                    pass
                return False
            self.process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            if self.process.returncode != 0:
                said = (self.folder / "stderr.txt").read_text(errors="replace").strip().splitlines()[-5:]
                sys.exit(f"error: mirror fetch failed with {self.label} (exit {self.process.returncode})" + "".join(f"\n  {line}" for line in said))
            self.result = (usage.ru_utime + usage.ru_stime, self.own, time.monotonic() - self.start)
        return True

    def stop(self) -> None:
        if self.process.returncode is None:  # (set once it has ended)
            self.process.kill()  # its extraction workers leave when they see it gone
            self.process.wait()


def run_together(starts: list[Callable[[], Running]]) -> list[Running]:
    """Start the runs and wait for every one (each polled on each pass: a list, not a
    generator); one that fails to start or to end, or a Ctrl-C, stops the others, so that none
    goes on loading the machine."""
    started: list[Running] = []
    try:
        for start in starts:
            started.append(start())
        while not all([run.poll() for run in started]):
            time.sleep(0.05)
    finally:
        for run in started:
            run.stop()
    return started


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
    if args.against == "this":
        sys.exit("error: --against names a git commit; 'this' is the tree measured")

    web, port, _ = start_web(args.hosts, args.latency_ms, args.image_hosts, dns=False)
    urls = page_urls(args.pages, args.hosts, port)
    results: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mirror-fetch-cpu-", ignore_cleanup_errors=True) as tmp:
            (Path(tmp) / "a").mkdir()
            this = checkout(args.this, Path(tmp)) if args.this else ROOT / "src"
            trees = {"this": this, args.against: checkout(args.against, Path(tmp) / "a")}
            for round_ in range(args.rounds):
                order = list(trees.items())[:: 1 if round_ % 2 == 0 else -1]  # which starts first, in turn
                for images in (True, False):
                    starts = [partial(Running, label, src, urls, Path(tmp) / f"{label}-{images}-{round_}", images, args) for label, src in order]
                    for run in run_together(starts):
                        assert run.result is not None  # (ended: polled to the end)
                        results.setdefault((run.label, images), []).append(run.result)
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
    for images in (True, False):
        pairs = zip(results[("this", images)], results[(args.against, images)], strict=True)
        ratios = [ours[0] / theirs[0] for ours, theirs in pairs]
        shown = ", ".join(f"{r:.3f}" for r in ratios)
        variant = "images" if images else "--no-images"
        rows.append((f"this / {args.against}, {variant}", f"{statistics.median(ratios):.3f}x CPU per page (rounds: {shown})"))
    rows.append(("runs", f"{args.pages} pages, latency {args.latency_ms:g} ms, medians of {args.rounds} rounds, the two trees at the same time"))
    report("fetch CPU A/B", rows, args.record)


if __name__ == "__main__":
    main()
