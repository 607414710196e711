"""CPU per page of `mirror fetch --no-images`, this tree against another checkout, run by run.

The main process (HTTP, WARC, SQLite and the search index) and all processes (with the
extraction workers) are reported apart: the first from the process's own rusage, the second
from what `wait4` returns for it. The two trees take turns on the same loopback web (0 ms of
latency, the pages of bench/throughput.py), so a machine whose speed drifts slows both alike.

    git worktree add --detach ../base <commit>
    python bench/fetch_cpu.py --base ../base --pages 400 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _measure import measure, report  # noqa: E402
from loopback import page_urls  # noqa: E402
from throughput import start_web  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# `python -m mirror` that writes its own CPU seconds (not its children's) to a file at exit
_RUN = (
    "import atexit, resource, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "def _own():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    open(out, 'w').write(str(usage.ru_utime + usage.ru_stime))\n"
    "atexit.register(_own)\n"
    "sys.argv[0] = 'mirror'\n"
    "runpy.run_module('mirror', run_name='__main__')\n"
)


def one_run(tree: Path, urls: list[str]) -> tuple[float, float, float, dict]:
    """(wall s, main-process CPU s, all-processes CPU s, statuses) of one fetch with `tree`'s code."""
    with tempfile.TemporaryDirectory(prefix="mirror-cpu-") as tmp:
        folder = Path(tmp)
        (folder / "seeds").mkdir()
        (folder / "seeds" / "urls.txt").write_text("\n".join(urls) + "\n")
        own = folder / "own-cpu"
        command = [sys.executable, "-c", _RUN, str(own), "fetch", "seeds", "--delay", "0", "--per-host", "4",
                   "--concurrency", "64", "--retries", "1", "--json", "--browser", "never", "--no-images"]
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        m = measure(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if m.returncode != 0 or not own.exists():
            sys.exit(f"error: mirror fetch with {tree} failed (exit {m.returncode})")
        db = sqlite3.connect(folder / "archive" / "mirror.db")
        statuses = dict(db.execute("select status, count(*) from pages group by 1").fetchall())
        db.close()
        return m.wall, float(own.read_text()), m.cpu, statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="a checkout (git worktree) of the code to compare with")
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    args = parser.parse_args()
    if not (args.base / "src" / "mirror").is_dir():
        sys.exit(f"error: {args.base} has no src/mirror (give a checkout of mirror)")

    trees = {"base": args.base.resolve(), "now": ROOT}
    web, port = start_web(16, 0.0, 30)
    runs: dict[str, list[tuple[float, float, float, dict]]] = {name: [] for name in trees}
    try:
        urls = page_urls(args.pages, 16, port)
        for _ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(one_run(tree, urls))
    finally:
        web.kill()
        web.wait()
    rows = []
    for name, results in runs.items():
        n = args.pages * len(results)
        wall, own, total = (sum(r[i] for r in results) for i in range(3))
        rows.append((f"{name} ({trees[name].name}), {len(results)} runs of {args.pages} pages",
                     f"main process {1000 * own / n:.1f} ms CPU per page, all processes {1000 * total / n:.1f}; "
                     f"{args.pages * len(results) / wall:.1f} pages/s; statuses {results[-1][3]}"))
    report("fetch CPU per page, --no-images, 0 ms", rows, args.record)


if __name__ == "__main__":
    main()
