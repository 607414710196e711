"""`mirror search` as a process: start-up plus one query, the way a person (or a script)
runs it. Target: p50 < 150 ms on the bench archive.

Builds the search benchmark's archive (real corpus texts, N articles), then runs
`mirror search QUERY --json` as a new process for each of --queries queries
(2- and 4-character Chinese, English, in turn) and reports p50 and p95, and the
modules whose import costs the most (python -X importtime), which is where the
time of a short search goes.

    python bench/search_process.py --docs 10000 --queries 50 [--record]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import percentile, report  # noqa: E402
from search import QUERIES, build  # noqa: E402


def run_search(folder: Path, query: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *extra, "-m", "mirror", "search", query, "--json", "--archive", str(folder)],
        check=True, capture_output=True, text=True,
    )


def time_queries(folder: Path, n: int) -> list[float]:
    queries = [q for group in zip(*QUERIES.values(), strict=True) for q in group]
    run_search(folder, queries[0])  # warm the page cache and the .pyc files
    samples = []
    for i in range(n):
        start = time.perf_counter()
        run_search(folder, queries[i % len(queries)])
        samples.append(time.perf_counter() - start)
    return samples


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
    parser.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mirror-search-process-") as tmp:
        folder = Path(tmp)
        build(folder, args.docs)
        samples = time_queries(folder, args.queries)
        rows = [
            ("archive", f"{args.docs} articles (bench/search.py's builder)"),
            ("mirror search (process)", f"p50 {percentile(samples, 50) * 1000:.0f} ms, p95 {percentile(samples, 95) * 1000:.0f} ms over {len(samples)} queries"),
            ("target", "p50 < 150 ms: " + ("met" if percentile(samples, 50) < 0.150 else "NOT met")),
            ("heaviest imports", heaviest_imports(folder)),
        ]
    report("search as a process", rows, args.record)


if __name__ == "__main__":
    main()
