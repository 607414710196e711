"""Extraction CPU per page: mirror now, mirror at an older commit, trafilatura's default `extract()`,
and `extract()` as trafilatura's CLI runs it in bench/throughput.py (`--markdown --with-metadata`).

Each runs in a process of its own, and they take the pages in turn, page by page, so a
machine whose speed drifts (a shared VM) slows them alike. Separate processes, because the
first extraction of a page fills caches (trafilatura's, htmldate's, dateparser's) that a
second one in the same process hits: in one process, whichever ran first on a page paid
~12 ms more. The older commit's `src/` is exported from git and imported in its own process, with
the process-wide settings it made itself (dateparser's locales, lxml's element lookup) and
no others; trafilatura runs as installed. Each process first extracts 30 pages that are not
measured: the first written-out dates load dateparser's locales and compile its patterns,
a cost paid once per worker process, not per page.

    python bench/extract_cost.py --against f5c953a [--pages 100]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _measure import report

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MIRROR_CORPUS") or ROOT.parent / "shared" / "corpus")
URL = "http://127.0.0.1/page.html"
WARM_UP = 30  # Dragnet's first pages: the measured ones start at its 200th


def load_old_extract(ref: str):
    """`extract` as it was at `ref`: that commit's `src/` exported from git (the working tree is
    never touched) and imported in this process, which runs nothing else of mirror's. Whatever
    the commit's layout (`mirror/extract.py` before the stages became packages), `mirror.extract`
    names its `extract`."""
    where = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    sys.path.insert(0, str(where / "src"))
    for name in [m for m in sys.modules if m == "mirror" or m.startswith("mirror.")]:
        del sys.modules[name]
    from mirror.extract import extract

    return extract


_extract = None  # in each process: the extraction it measures


def _start(variant: str, against: str) -> None:
    global _extract
    sys.path.insert(0, str(Path(__file__).parent))
    if variant == "before":
        _extract = load_old_extract(against)
    elif variant == "now":
        from mirror.extract import extract

        _extract = extract
    else:
        import trafilatura

        # the default, or what the CLI does with each page in bench/throughput.py: Markdown and metadata, as mirror
        cli = {} if variant == "trafilatura" else {"output_format": "markdown", "with_metadata": True}
        _extract = lambda body, url, _type: trafilatura.extract(body, url=url, **cli)  # noqa: E731
    # steady state: the first pages with a written-out date load dateparser's locales and
    # compile its patterns (~0.5-3 s once per process), so warm up on pages never measured
    for path in sorted(CORPUS.glob("dragnet/input/*.html"))[:WARM_UP]:
        _extract(path.read_bytes(), URL, "text/html")


def _measure(body: bytes) -> float:
    start = time.process_time()
    _extract(body, URL, "text/html")
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git commit whose extraction to compare with")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/extract_cost.jsonl")
    args = parser.parse_args()

    files = sorted(CORPUS.glob("dragnet/input/*.html"))[200:] + sorted(CORPUS.glob("readability/test-pages/*/source.html"))
    step = max(1, len(files) // args.pages)
    bodies = [f.read_bytes() for f in files[::step]][: args.pages]
    if not bodies:
        sys.exit(f"no corpus pages found in {CORPUS} (set MIRROR_CORPUS)")
    names = ("before", "now", "trafilatura", "trafilatura --markdown --with-metadata")
    spawn = multiprocessing.get_context("spawn")
    pools = {name: ProcessPoolExecutor(1, mp_context=spawn, initializer=_start, initargs=(name, args.against)) for name in names}
    spent = dict.fromkeys(names, 0.0)
    try:
        for body in bodies:
            for name in names:  # one after the other: the processes share the machine's cores
                spent[name] += pools[name].submit(_measure, body).result()
    finally:
        for pool in pools.values():
            pool.shutdown()
    counted = len(bodies)
    rows = [(f"extraction CPU ms/page ({name}, {counted} pages)", f"{1000 * value / counted:.1f}") for name, value in spent.items()]
    report(f"extraction cost against {args.against}", rows, args.record)


if __name__ == "__main__":
    main()
