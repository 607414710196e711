"""Seed parsing and recording at scale: linear time, 1e6 links in under 30 s.

    python bench/seeds.py --links 1000000 --record

Three shapes: a reading list (title line, URL line), one line holding every
URL, and a line of unclosed <a href> tags (the pathological case for regexes).
Each is parsed (`read_seeds`) and recorded (`Archive.record_inventory`) into a
new archive in process; the wall and CPU time of each step are printed (on a
shared machine only the CPU time means anything).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import report  # noqa: E402
from mirror.seeds import read_seeds  # noqa: E402
from mirror.store import Archive  # noqa: E402


def shapes(n: int) -> dict[str, str]:
    return {
        "reading-list": "\n".join(f"第 {i} 篇：分布式训练笔记\nhttps://example.com/p/{i}?utm_source=x\n" for i in range(n)),
        "one-line": " ".join(f"https://example.com/p/{i}" for i in range(n)) + "\n",
        "unclosed-a": "".join(f"<a href='https://example.com/p/{i}'>" for i in range(n)) + "\n",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=["reading-list", "one-line", "unclosed-a"], action="append")
    parser.add_argument("--record", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()
    rows = []
    for name, text in shapes(args.links).items():
        if args.shape and name not in args.shape:
            continue
        with tempfile.TemporaryDirectory(prefix="mirror-seeds-bench-") as tmp:
            folder = Path(tmp)
            seed = folder / f"{name}.txt"
            seed.write_text(text, encoding="utf-8")
            start = time.perf_counter(), time.process_time()
            inventory = read_seeds([seed], base=folder)
            parsed = time.perf_counter(), time.process_time()
            with Archive(folder / "archive") as archive:
                stats = archive.record_inventory(inventory)
            recorded = time.perf_counter(), time.process_time()
            wall, cpu = (recorded[0] - start[0], parsed[0] - start[0]), (recorded[1] - start[1], parsed[1] - start[1])
            print(
                f"{name:13} {len(inventory.links):>9} links  parse {parsed[0] - start[0]:6.2f} s  "
                f"record {recorded[0] - parsed[0]:6.2f} s  total {wall[0]:6.2f} s wall, {cpu[0]:6.2f} s CPU  "
                f"({stats.pages} pages)",
                flush=True,
            )
            rows.append((
                f"{name}, {len(inventory.links):,} links",
                f"total {wall[0]:.1f} s wall / {cpu[0]:.1f} s CPU (parse {wall[1]:.1f} / {cpu[1]:.1f}, "
                f"record {wall[0] - wall[1]:.1f} / {cpu[0] - cpu[1]:.1f})",
            ))
    report("seeds", rows, args.record)


if __name__ == "__main__":
    main()
