"""A no-op re-run: `mirror fetch` over N links that are all archived already.

python bench/rerun.py --links 10000
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measure, percentile, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/rerun.jsonl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mirror-rerun-bench-") as tmp:
        folder = Path(tmp)
        (folder / "seeds").mkdir()
        lines = []
        for i in range(args.links):  # a reading list in the style of the user's: title line, then URL
            lines += [f"第 {i} 篇：分布式训练笔记 - 知乎", f"https://zhuanlan.zhihu.com/p/{100000 + i}?utm_source=wechat", ""]
        (folder / "seeds" / "list.txt").write_text("\n".join(lines), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "mirror", "links", "--json"], cwd=folder, check=True, capture_output=True)
        conn = sqlite3.connect(folder / "archive" / "mirror.db")
        with conn:  # as if every page had been fetched
            conn.execute("update pages set status = 'archived', warc_file = 'x.warc.gz', warc_offset = 0, warc_length = 1")
        conn.close()
        walls = []
        for _ in range(args.reps):
            result = measure(
                [sys.executable, "-m", "mirror", "fetch", "--json", "--browser", "never"],
                cwd=folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            assert result.returncode == 0
            walls.append(result.wall)
    rows = [(f"no-op re-run over {args.links} archived links", f"median {percentile(walls, 50):.2f} s, max {max(walls):.2f} s over {args.reps} runs")]
    report("re-run", rows, args.record)


if __name__ == "__main__":
    main()
