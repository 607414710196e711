"""`mirror search` as a process: start-up plus one query, the way a person (or a script)
runs it. Target (issue 41): p95 < 300 ms at 100,000 articles.

Builds the search benchmark's archive (real corpus texts, N articles; `--archive DIR` keeps it
and reuses it), then runs `mirror search QUERY --json` as a new process for each of --queries
queries (2- and 4-character Chinese, English, in turn) and reports p50 and p95, and the modules
whose import costs the most (python -X importtime), which is where the time of a short search
goes. `--against REF` runs that commit's `mirror search` (its `src/` exported from git) on the
same archive in the same run, query by query in turn, so the machine's drift falls on both.

    python bench/search_process.py --docs 100000 --archive /tmp/bench100k --queries 50 --against 7740b5b [--record]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import percentile, report
from search import QUERIES, build


def run_search(folder: Path, query: str, *extra: str, src: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m mirror search`, of the installed mirror or of the `src` given (PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # (a user's Python keeps its bytecode cache)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return subprocess.run(
        [sys.executable, *extra, "-m", "mirror", "search", query, "--json", "--archive", str(folder)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )


def time_queries(folder: Path, n: int, srcs: dict[str, Path | None]) -> dict[str, list[float]]:
    """Seconds of each query's process, for each `src` (None: the installed one), in turn."""
    queries = [q for group in zip(*QUERIES.values(), strict=True) for q in group]
    samples: dict[str, list[float]] = {name: [] for name in srcs}
    for src in srcs.values():
        run_search(folder, queries[0], src=src)  # warm the page cache and the .pyc files
    for i in range(n):
        for name, src in srcs.items():
            start = time.perf_counter()
            run_search(folder, queries[i % len(queries)], src=src)
            samples[name].append(time.perf_counter() - start)
    return samples


def exported(ref: str, where: Path) -> Path:
    """The `src/` of `ref`, exported from git (the working tree is never touched)."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "-C", str(root), "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where / "src"


def heaviest_imports(folder: Path, top: int = 8) -> str:
    """Top-level packages by cumulative import time in one `mirror search`."""
    stderr = run_search(folder, "人工智能", "-X", "importtime").stderr
    totals: dict[str, int] = {}
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)", line)
        if match and not match[2]:  # a module imported from the top, not from inside another
            totals[match[3]] = totals.get(match[3], 0) + int(match[1])
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} {us / 1000:.0f} ms" for name, us in ranked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--archive", type=Path, help="build the archive here and keep it (reused when it is there already)")
    parser.add_argument("--against", help="a git commit whose `mirror search` runs on the same archive, in turn")
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/search_process.jsonl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mirror-search-process-") as tmp:
        folder = args.archive or Path(tmp)
        reused = (folder / "mirror.db").exists()
        if not reused:
            build(folder, args.docs)
        srcs: dict[str, Path | None] = {"this tree": None}
        if args.against:
            srcs[args.against] = exported(args.against, Path(tmp))
        times = time_queries(folder, args.queries, srcs)
        import sqlite3

        with sqlite3.connect(folder / "mirror.db") as conn:
            articles = conn.execute("select count(*) from pages where status = 'archived'").fetchone()[0]
        rows = [("archive", f"{articles} articles (bench/search.py's builder{', built before' if reused else ''})")]
        for name, samples in times.items():
            rows.append(
                (
                    f"mirror search (process), {name}",
                    f"p50 {percentile(samples, 50) * 1000:.0f} ms, p95 {percentile(samples, 95) * 1000:.0f} ms over {len(samples)} queries",
                )
            )
        mine = times["this tree"]
        rows += [
            ("target", "p95 < 300 ms: " + ("met" if percentile(mine, 95) < 0.300 else "NOT met")),
            ("heaviest imports", heaviest_imports(folder)),
        ]
    report("search as a process", rows, args.record)


if __name__ == "__main__":
    main()
