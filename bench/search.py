"""Search latency at scale: the Python API, `mirror search` as a process, datasette
(search page, the pages table's JSON with `_search`, the reading home).

Builds an archive of N articles from real corpus texts (Chinese, Japanese and
English pages, repeated with variations), then times 2- and 4-character
Chinese queries and English queries. Also reports index size against text size.

    python bench/search.py --docs 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measure, percentile, report
from loopback import CORPUS, corpus_pages, page_urls, serve

QUERIES = {
    "zh 1 char": ["国", "的", "人"],  # in most articles (issue 29: the tail)
    "zh 2 chars": ["记者", "手机", "公司"],
    "zh 4 chars": ["人工智能", "新冠肺炎", "社交媒体"],
    "english": ["the", "computer", "facebook"],
}


def base_articles() -> list:
    from mirror.extract import extract

    articles = []
    for rel in corpus_pages():
        result = extract((CORPUS / rel).read_bytes(), f"https://bench.example/{rel}", "text/html")
        if result.status == "archived":
            articles.append(result)
    return articles


_ARTICLES: list = []  # the base articles, inherited by the builder's worker processes


def variant(i: int):
    """The i-th article: a base article's paragraphs in another order (the same words, a
    different document), with the index values the extraction worker makes for this text."""
    from dataclasses import replace

    from mirror._util.segment import index_values

    base = _ARTICLES[i % len(_ARTICLES)]
    paragraphs = base.text.split("\n")
    random.Random(i).shuffle(paragraphs)
    text = f"第{i}篇 variant {i}\n" + "\n".join(paragraphs)
    title = f"{base.title} ({i})"
    made_from = (title, text, base.author, base.sitename)
    url = f"https://bench.example/{i}"
    return url, replace(base, text=text, markdown=text, title=title, search_index=index_values(*made_from), indexed_from=made_from)


def build(folder: Path, n: int) -> Path:
    """The articles are made in worker processes, as `mirror fetch`'s extraction pool makes
    them (with their index values); this process stores them, as `mirror fetch` does."""
    import multiprocessing

    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    _ARTICLES[:] = base_articles()
    with Archive(folder) as archive, multiprocessing.get_context("fork").Pool(max(1, (os.cpu_count() or 2) - 1)) as pool:
        archive.record_inventory(links_from_urls([f"https://bench.example/{i}" for i in range(n)]))
        blocks = [range(start, min(start + 2000, n)) for start in range(0, n, 2000)]
        made = pool.map_async(variant, blocks[0], chunksize=100) if blocks else None
        for following in [*blocks[1:], None]:
            batch = made.get()
            made = pool.map_async(variant, following, chunksize=100) if following else None  # made while these are stored
            archive.save_extractions(batch)
    return folder / "mirror.db"


def time_api(db_path: Path, reps: int) -> dict[str, list[float]]:
    import sqlite_utils

    from mirror.search import search

    db = sqlite_utils.Database(db_path)
    times: dict[str, list[float]] = {}
    for kind, queries in QUERIES.items():
        for query in queries:
            search(db, query, limit=20)  # warm the page cache
        samples = []
        for _ in range(reps):
            for query in queries:
                start = time.perf_counter()
                search(db, query, limit=20)
                samples.append(time.perf_counter() - start)
        times[kind] = samples
    return times


def bounded_against_exhaustive(db_path: Path) -> str:
    """How the results of a query with more than RANKED_AT_MOST matches differ from ranking them
    all, per class: the share of the exhaustive top 20 that the bounded search returns too, and
    the share of the bounded top 20 that score at least as well as the exhaustive 20th (this
    builder's articles are variants of a few hundred: another variant of the best article is as
    good a hit, by bm25, as the one ranking every match finds)."""
    import sqlite_utils

    from mirror.search import query as search_query

    db = sqlite_utils.Database(db_path)
    parts = []
    for kind, queries in QUERIES.items():
        shared, as_good = [], []
        for q in queries:
            bounded = search_query.search(db, q, limit=20)
            kept, search_query.RANKED_AT_MOST = search_query.RANKED_AT_MOST, 10**9
            try:
                exhaustive = search_query.search(db, q, limit=20, time_limit=60)
            finally:
                search_query.RANKED_AT_MOST = kept
            ids = {h.id for h in exhaustive}
            shared.append(len(ids & {h.id for h in bounded}) / max(1, len(exhaustive)))
            floor = min((h.score for h in exhaustive), default=0)
            as_good.append(sum(h.score >= floor - 1e-9 for h in bounded) / max(1, len(bounded)))
        parts.append(f"{kind}: {sum(shared) / len(shared):.0%} shared, {sum(as_good) / len(as_good):.0%} as good")
    return "; ".join(parts)


def time_cli(folder: Path, reps: int, *options: str) -> dict[str, list[float]]:
    """`mirror search` as a user runs it: the installed command."""
    script = Path(sys.executable).with_name("mirror")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mirror"]
    _timed([*command, "search", "x", *options, "--archive", str(folder)])  # (a first run writes the bytecode cache)
    return {
        kind: [_timed([*command, "search", queries[i % len(queries)], *options, "--archive", str(folder)]) for i in range(reps)]
        for kind, queries in QUERIES.items()
    }


def time_typer(reps: int) -> dict[str, list[float]]:
    """The floor of any typer command on this machine at this moment: Python starting and
    importing typer, nothing else."""
    return {"python -c 'import typer'": [_timed([sys.executable, "-c", "import typer"]) for _ in range(reps)]}


def _timed(command: list[str]) -> float:
    """Seconds a process takes, with the bytecode cache a user's Python keeps (this machine's
    environment may set PYTHONDONTWRITEBYTECODE, which would compile every module at each start)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def time_datasette(db_path: Path, reps: int) -> dict[str, list[float]]:
    """The search page (where the table's search box goes), the pages table's JSON with `_search`
    (datasette's own, with its count and facets, as a client gets it) and the reading home, in
    datasette as `mirror serve` runs it (plain datasette suggests facets: seconds a table page)."""
    from urllib.parse import quote

    from datasette.app import Datasette

    from mirror.cli.serve import SETTINGS

    ds = Datasette([str(db_path)], settings=SETTINGS)
    table = "/mirror/pages.json?_size=20&_col=title&_extra=count,facet_results&_search="

    async def timed(path: str, check=None) -> float:
        start = time.perf_counter()
        response = await ds.client.get(path)
        elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.text[:500]
        if check:
            check(response)
        return elapsed

    def has_facets(response) -> None:
        facets = response.json()["facet_results"]
        assert "status" in facets.get("results", facets), "no facets in the table JSON"

    async def run() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {}
        for kind, queries in QUERIES.items():
            for path in ("/-/mirror/search?q=", table):
                await ds.client.get(path + quote(queries[0]))  # warm up
            times[kind] = [await timed("/-/mirror/search?q=" + quote(queries[i % len(queries)])) for i in range(reps)]
            times[kind + " (table JSON _search)"] = [await timed(table + quote(queries[i % len(queries)]), has_facets) for i in range(reps)]
        await ds.client.get("/")
        times["reading home /"] = [await timed("/" if i % 2 else "/?page=3") for i in range(reps)]
        return times

    return asyncio.run(run())


def time_maintenance(folder: Path, n: int, captured: int) -> list[tuple[str, str]]:
    """`mirror links` and `mirror reindex` on the archive as it is (after the searches: both
    change it). `links` records a reading list of the archive's N links (every page there
    already, every link new: the list is new); `reindex` re-extracts the pages with a WARC
    capture, which the builder's articles have not: `captured` corpus pages are fetched into the
    archive first from a loopback server, and the index is completed over all N."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    mirror = [sys.executable, "-m", "mirror"]
    listing = folder / "bench-list.txt"
    listing.write_text("".join(f"https://bench.example/{i}\n" for i in range(n)), encoding="utf-8")
    links = _measured([*mirror, "links", str(listing), "--archive", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    servers = serve(hosts=1, port=0, latency_ms=0)
    port = servers[0].server_address[1]
    seed = folder / "bench-captured.txt"
    seed.write_text("\n".join(page_urls(captured, 1, port)) + "\n", encoding="utf-8")
    fetched = _measured(
        [*mirror, "fetch", str(seed), "--archive", str(folder), "--delay", "0", "--no-images"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    reindex = _measured([*mirror, "reindex", "--archive", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    for server in servers:
        server.shutdown()

    def said(m) -> str:
        return f"{m.wall:.1f} s wall, {m.cpu:.1f} s CPU, peak RSS {m.peak_mb:.0f} MB" + ("" if m.returncode == 0 else f", exit {m.returncode}")

    return [
        ("mirror links", f"a reading list of the {n:,} links, recorded: {said(links)}"),
        (
            "mirror reindex",
            f"{captured:,} pages with WARC captures (fetched from a loopback server in {fetched.wall:.0f} s) "
            f"re-extracted, the index completed over all {n + captured:,}: {said(reindex)}; "
            f"{reindex.wall / captured * 1000:.1f} ms per captured page",
        ),
    ]


def _measured(command: list[str], **popen):
    """`_measure.measure`, started from a small process: Linux counts the RSS a child had when
    forked from this (large) one into its peak, so the command runs under /usr/bin/time here."""
    import shutil
    from types import SimpleNamespace

    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if gnu_time is None:
        return measure(command, **popen)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        m = measure([gnu_time, "-o", out.name, "-f", "%M", *command], **popen)
        peak = int(out.read().split()[-1]) / 1024
    return SimpleNamespace(wall=m.wall, cpu=m.cpu, peak_mb=peak, returncode=m.returncode)


def sizes(db_path: Path) -> tuple[float, float]:
    conn = sqlite3.connect(db_path)
    conn.execute("pragma wal_checkpoint(truncate)")
    text = conn.execute(
        "select sum(length(cast(coalesce(title,'') || coalesce(text,'') || coalesce(author,'') || coalesce(sitename,'') as blob))) from pages"
    ).fetchone()[0]
    try:
        index = conn.execute("select sum(pgsize) from dbstat where name like 'pages_fts%'").fetchone()[0]
    except sqlite3.OperationalError:
        index = None
    return text or 0, index or 0


def breakdown(db_path: Path, text: float) -> str:
    """The database against its text, and its largest parts (issue 29: at most 2.5x)."""
    conn = sqlite3.connect(db_path)
    total = conn.execute("pragma page_count").fetchone()[0] * conn.execute("pragma page_size").fetchone()[0]
    try:
        parts = conn.execute("select name, sum(pgsize) from dbstat group by name order by 2 desc limit 4").fetchall()
    except sqlite3.OperationalError:
        parts = []
    return f"{total / 2**20:.0f} MB for {text / 2**20:.0f} MB of text ({total / text:.2f}x): " + ", ".join(
        f"{name} {size / 2**20:.0f} MB" for name, size in parts
    )


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def summary(times: dict[str, list[float]]) -> str:
    return "; ".join(f"{kind}: p50 {percentile(v, 50) * 1000:.1f} ms, p95 {percentile(v, 95) * 1000:.1f} ms" for kind, v in times.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/search.jsonl")
    parser.add_argument("--archive", type=Path, help="build the archive here and keep it (reused when it is there already)")
    parser.add_argument("--build-only", action="store_true", help="build the archive (--archive) and stop")
    parser.add_argument(
        "--maintenance",
        type=int,
        default=0,
        metavar="PAGES",
        help="then time mirror links and mirror reindex (with PAGES captured pages fetched in first)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mirror-search-bench-") as tmp:
        folder = args.archive or Path(tmp)
        started = time.perf_counter()
        reused = (folder / "mirror.db").exists()
        db_path = folder / "mirror.db" if reused else build(folder, args.docs)
        built = time.perf_counter() - started
        peak = _peak_mb()
        if args.build_only:
            print(f"{args.docs} articles built in {built:.0f} s, peak RSS {peak:.0f} MB (this process; its workers less)")
            return
        text, index = sizes(db_path)
        rows = [
            (
                "archive",
                (f"{args.docs} articles (built before)" if reused else f"{args.docs} articles built in {built:.0f} s, peak RSS {peak:.0f} MB")
                + f"; database {db_path.stat().st_size / 2**20:.0f} MB",
            ),
            (
                "index size",
                f"{index / 2**20:.0f} MB of FTS5 index for {text / 2**20:.0f} MB of text ({index / text:.2f}x)" if index else "dbstat not available",
            ),
            ("database size", breakdown(db_path, text)),
            ("Python API", summary(time_api(db_path, args.reps))),
            ("bounded vs exhaustive ranking (top 20)", bounded_against_exhaustive(db_path)),
            ("mirror search (process)", summary(time_cli(folder, args.reps))),
            ("mirror search --json (process)", summary(time_cli(folder, args.reps, "--json"))),
            ("a typer command's floor", summary(time_typer(args.reps))),
            ("datasette (as `mirror serve` runs it)", summary(time_datasette(db_path, args.reps))),
            ("peak RSS", f"{_peak_mb():.0f} MB" + (" serving (this process: the searches and datasette)" if reused else " (building and serving)")),
        ]
        if args.maintenance:
            rows += time_maintenance(folder, args.docs, args.maintenance)
    report("search", rows, args.record)


if __name__ == "__main__":
    main()
