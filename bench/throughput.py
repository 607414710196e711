"""End-to-end throughput of `mirror fetch` against trafilatura's own downloader.

Both fetch the same URL list from a loopback web of real pages (16 hosts) with
equal politeness (trafilatura's SLEEP_TIME = our --delay), into fresh output
folders. Also measures the extraction-bound limit: cores / mean trafilatura
extraction time per page, measured in-process on the same pages.

    python bench/throughput.py --pages 2000 --latency-ms 50
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measure, report  # noqa: E402
from loopback import CORPUS, corpus_pages, page_urls, served  # noqa: E402

HERE = Path(__file__).resolve().parent


def start_web(hosts: int, latency_ms: float) -> tuple[subprocess.Popen, int]:
    web = subprocess.Popen(
        [sys.executable, str(HERE / "loopback.py"), "--hosts", str(hosts), "--latency-ms", str(latency_ms), "--lifetime", "3600"],
        stdout=subprocess.PIPE, text=True,
    )
    line = web.stdout.readline().split()
    if not line or line[0] != "ready":
        sys.exit("error: the loopback web did not start")
    return web, int(line[1])


def _extract_all(passes: int) -> tuple[int, float, float]:
    """Extract every corpus page `passes` times after a warm-up pass: (pages, CPU s, wall s)."""
    from mirror.extract import extract

    bodies = [((CORPUS / rel).read_bytes(), f"http://127.0.0.1/{rel}") for rel in corpus_pages()]
    for body, url in bodies:
        extract(body, url, "text/html")
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(passes):
        for body, url in bodies:
            extract(body, url, "text/html")
    return len(bodies) * passes, time.process_time() - cpu, time.perf_counter() - wall


def extraction_limit(cores: int, passes: int = 3) -> tuple[float, float, float]:
    """Mean CPU per page of our extraction, the limit cores / that, and the measured ceiling:
    pages/s when `cores` processes do nothing but extract at once (cores are rarely independent)."""
    from concurrent.futures import ProcessPoolExecutor

    pages, cpu, _ = _extract_all(passes)
    mean = cpu / pages
    with ProcessPoolExecutor(cores) as pool:
        results = list(pool.map(_extract_all, [passes] * cores))
    ceiling = sum(p for p, _, _ in results) / max(w for _, _, w in results)
    return mean, cores / mean, ceiling


def run_mirror(urls: list[str], folder: Path, delay: float, per_host: int, concurrency: int) -> dict:
    (folder / "seeds").mkdir(parents=True)
    (folder / "seeds" / "urls.txt").write_text("\n".join(urls) + "\n")
    measured = measure(
        [sys.executable, "-m", "mirror", "fetch", "seeds", "--delay", str(delay), "--per-host", str(per_host),
         "--concurrency", str(concurrency), "--no-images", "--retries", "1", "--json"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    db = sqlite3.connect(folder / "archive" / "mirror.db")
    statuses = dict(db.execute("select status, count(*) from pages group by 1").fetchall())
    return {"measured": measured, "statuses": statuses, "saved": statuses.get("archived", 0) + statuses.get("no_text", 0)}


def run_trafilatura(urls: list[str], folder: Path, delay: float, parallel: int) -> dict:
    folder.mkdir(parents=True)
    (folder / "urls.txt").write_text("\n".join(urls) + "\n")
    config = folder / "settings.cfg"
    config.write_text(
        "[DEFAULT]\nDOWNLOAD_TIMEOUT = 30\nMAX_FILE_SIZE = 20000000\nMIN_FILE_SIZE = 10\n"
        f"SLEEP_TIME = {delay}\nUSER_AGENTS =\nCOOKIE =\nMAX_REDIRECTS = 2\nSSRF_PROTECTION = off\n"
        "INSECURE_SSL_FALLBACK = on\nMIN_EXTRACTED_SIZE = 250\nMIN_OUTPUT_SIZE = 1\nMIN_OUTPUT_COMM_SIZE = 1\n"
        "MAX_TREE_SIZE =\nEXTRACTION_TIMEOUT = 0\nMIN_DUPLCHECK_SIZE = 100\nMAX_REPETITIONS = 2\n"
        "EXTENSIVE_DATE_SEARCH = on\nEXTERNAL_URLS = off\n"
    )
    trafilatura = Path(sys.executable).with_name("trafilatura")
    measured = measure(
        [str(trafilatura), "--input-file", "urls.txt", "--parallel", str(parallel), "--output-dir", "out",
         "--markdown", "--with-metadata", "--config-file", str(config)],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    saved = len(list((folder / "out").glob("*"))) if (folder / "out").is_dir() else 0
    return {"measured": measured, "saved": saved}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.0, help="politeness for both tools (seconds between requests to a host)")
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--parallel", type=int, default=4, help="trafilatura --parallel")
    parser.add_argument("--skip-trafilatura", action="store_true")
    parser.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    args = parser.parse_args()

    cores = os.cpu_count() or 1
    mean, limit, ceiling = extraction_limit(cores)
    web, port = start_web(args.hosts, args.latency_ms)
    try:
        with tempfile.TemporaryDirectory(prefix="mirror-bench-") as tmp:
            urls = page_urls(args.pages, args.hosts, port)
            before = served(port)
            ours = run_mirror(urls, Path(tmp) / "mirror", args.delay, args.per_host, args.concurrency)
            ours["fetched"], before = served(port) - before, served(port)
            theirs = None
            if not args.skip_trafilatura:
                theirs = run_trafilatura(urls, Path(tmp) / "trafilatura", args.delay, args.parallel)
                theirs["fetched"] = served(port) - before
    finally:
        web.kill()

    m = ours["measured"]
    rows = [
        ("pages", f"{args.pages} ({len(corpus_pages())} distinct real pages, {args.hosts} hosts, {args.latency_ms:g} ms latency)"),
        ("extraction cost", f"{mean * 1000:.1f} ms CPU per page, so the {cores}-core limit is {limit:.1f} pages/s"),
        ("extraction ceiling", f"{ceiling:.1f} pages/s measured with {cores} processes doing nothing but extracting"),
        ("mirror fetch", f"{args.pages / m.wall:.1f} pages/s ({m.wall:.1f} s, {m.cpu:.1f} s CPU, peak RSS {m.peak_mb:.0f} MB), "
                         f"{ours['fetched']} fetched, {ours['saved']} saved {json.dumps(ours['statuses'])}"),
        ("of the limit", f"{args.pages / m.wall / limit:.0%} (of the measured ceiling: {args.pages / m.wall / ceiling:.0%})"),
    ]
    if theirs:
        t = theirs["measured"]
        rows += [
            (f"trafilatura --parallel {args.parallel}", f"{args.pages / t.wall:.1f} pages/s ({t.wall:.1f} s, {t.cpu:.1f} s CPU, "
                                                         f"peak RSS {t.peak_mb:.0f} MB), {theirs['fetched']} fetched, {theirs['saved']} output files (named by content hash)"),
            ("ratio", f"{t.wall / m.wall:.2f}x"),
        ]
    report("throughput", rows, args.record)


if __name__ == "__main__":
    main()
