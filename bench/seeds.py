"""Seed parsing and recording at scale: linear time, 1e6 links in under 30 s.

    python bench/seeds.py --links 1000000 --repeat 3 --record

Three shapes: a reading list (title line, URL line), one line holding every
URL, and a line of unclosed <a href> tags (the pathological case for regexes);
and the exports of the services people leave (issue 28: "100,000-line exports load
as fast as a reading list"), each with a title, tags and a date per link: Pocket's
HTML and CSV, Raindrop's and Instapaper's CSV, Pinboard's JSON, RSS, Atom, OPML.

    python bench/seeds.py --links 100000 --repeat 3 --record

Each is parsed (`read_seeds`) and recorded (`Archive.record_inventory`) into a
new archive in process; the wall and CPU time of each step are printed. With --repeat N,
every shape runs once a round, N rounds, and each export's total is compared with the
reading list's of the same round (the median ratio is reported): this machine's speed drifts
by a fifth between minutes, more than the differences measured. The
record uses two cores (a second thread inserts the rows): on a shared machine
neither time means much, so the target, 30 s wall, is checked on a quiet one.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import report

from mirror.seeds import read_seeds
from mirror.store import Archive


def shapes(n: int) -> dict[str, tuple[str, str]]:
    """name -> (file name, text)."""
    import json

    title = "第 {i} 篇：分布式训练笔记"
    url = "https://example.com/p/{i}?utm_source=x"
    return {
        "reading-list": ("reading-list.txt", "\n".join(f"{title}\n{url}\n".format(i=i) for i in range(n))),
        "one-line": ("one-line.txt", " ".join(f"https://example.com/p/{i}" for i in range(n)) + "\n"),
        "unclosed-a": ("unclosed-a.txt", "".join(f"<a href='https://example.com/p/{i}'>" for i in range(n)) + "\n"),
        "pocket-html": (
            "ril_export.html",
            "<!DOCTYPE html><html><body><h1>Unread</h1><ul>\n"
            + "".join(
                f'<li><a href="{url}" time_added="{{t}}" tags="mlsys,注意力">{title}</a></li>\n'.format(i=i, t=1_700_000_000 + 37 * i)
                for i in range(n)
            )
            + "</ul></body></html>\n",
        ),
        "pocket-csv": (
            "pocket.csv",
            "title,url,time_added,tags,status\n"
            + "".join(f'"{title}",{url},{{t}},mlsys|注意力,unread\n'.format(i=i, t=1_700_000_000 + 37 * i) for i in range(n)),
        ),
        "raindrop-csv": (
            "raindrop.csv",
            "id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite\n"
            + "".join(
                f'{i},"{title}",,,{url},Unsorted,"并行, 分布式",{{t}},,,false\n'.format(
                    i=i, t=f"2024-05-{1 + i % 28:02d}T07:{i % 60:02d}:{i // 60 % 60:02d}.000Z"
                )
                for i in range(n)
            ),
        ),
        "instapaper-csv": (
            "instapaper.csv",
            "URL,Title,Selection,Folder,Timestamp\n"
            + "".join(f'{url},"{title}",,Unread,{{t}}\n'.format(i=i, t=1_710_000_000 + 37 * i) for i in range(n)),
        ),
        "pinboard-json": (
            "pinboard.json",
            json.dumps(
                [
                    {
                        "href": url.format(i=i),
                        "description": title.format(i=i),
                        "tags": "attention gpu",
                        "time": f"2023-01-{1 + i % 28:02d}T03:{i % 60:02d}:{i // 60 % 60:02d}Z",
                    }
                    for i in range(n)
                ],
                ensure_ascii=False,
                indent=0,
            ),
        ),
        "rss": (
            "weekly.rss",
            '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>周报</title>\n'
            + "".join(
                f"<item><title>{title}</title><link>{url}</link><pubDate>{{t}}</pubDate><category>mlsys</category></item>\n".format(
                    i=i, t=f"Tue, {1 + i % 28:02d} Mar 2024 08:{i % 60:02d}:{i // 60 % 60:02d} GMT"
                ).replace("&", "&amp;")
                for i in range(n)
            )
            + "</channel></rss>\n",
        ),
        "opml": (
            "feeds.opml",
            '<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><body><outline text="ML">\n'
            + "".join(f'<outline text="{title}" type="rss" xmlUrl="{url}"/>\n'.format(i=i).replace("&", "&amp;") for i in range(n))
            + "</outline></body></opml>\n",
        ),
    }


def _cpu() -> float:
    """CPU seconds of this process (both its threads) and of any children it waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_once(name: str, text: str) -> tuple[int, int, tuple[float, float], tuple[float, float]]:
    """Links, pages, (wall, CPU) of parse + record, (wall, CPU) of the parse alone."""
    with tempfile.TemporaryDirectory(prefix="mirror-seeds-bench-") as tmp:
        folder = Path(tmp)
        seed = folder / name
        seed.write_text(text, encoding="utf-8")
        start = time.perf_counter(), _cpu()
        inventory = read_seeds([seed], base=folder)
        parsed = time.perf_counter(), _cpu()
        with Archive(folder / "archive") as archive:
            stats = archive.record_inventory(inventory)
        recorded = time.perf_counter(), _cpu()
    total = (recorded[0] - start[0], recorded[1] - start[1])
    return len(inventory.links), stats.pages, total, (parsed[0] - start[0], parsed[1] - start[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=list(shapes(0)), action="append")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every shape: the best is reported, with the spread, and each round against the reading list"
    )
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/seeds.jsonl")
    args = parser.parse_args()
    chosen = {name: shape for name, shape in shapes(args.links).items() if not args.shape or name in args.shape}
    runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in chosen}
    counts: dict[str, int] = {}
    for _ in range(args.repeat):  # round by round, so that the machine's drift falls on every shape alike
        for name, (file_name, text) in chosen.items():
            links, pages, (wall, cpu), (parse_wall, parse_cpu) = run_once(file_name, text)
            runs[name].append((wall, cpu, parse_wall, parse_cpu))
            counts[name] = links
            print(
                f"{name:13} {links:>9} links  parse {parse_wall:6.2f} s  record {wall - parse_wall:6.2f} s  "
                f"total {wall:6.2f} s wall, {cpu:6.2f} s CPU  ({pages} pages)",
                flush=True,
            )
    rows = []
    baseline = runs.get("reading-list")
    for name, shape_runs in runs.items():
        wall, cpu, parse_wall, parse_cpu = min(shape_runs)
        spread = (
            f", {len(shape_runs)} runs: {min(r[0] for r in shape_runs):.1f}-{max(r[0] for r in shape_runs):.1f} s wall" if len(shape_runs) > 1 else ""
        )
        against = ""
        if baseline and name != "reading-list":  # each round's total against the reading list's in the same round
            ratios = sorted(mine[0] / theirs[0] for mine, theirs in zip(shape_runs, baseline, strict=True))
            against = f"; {statistics.median(ratios):.2f}x the reading list (median of {len(ratios)} rounds, {ratios[0]:.2f}-{ratios[-1]:.2f})"
        rows.append(
            (
                f"{name}, {counts[name]:,} links",
                f"total {wall:.1f} s wall / {cpu:.1f} s CPU (parse {parse_wall:.1f} / {parse_cpu:.1f}, "
                f"record {wall - parse_wall:.1f} / {cpu - parse_cpu:.1f}){spread}{against}",
            )
        )
    report("seeds", rows, args.record)


if __name__ == "__main__":
    main()
