"""End-to-end throughput of `mirror fetch` against trafilatura's own downloader, on a web that
looks like the real one, resolver included.

Both fetch the same URL list from a loopback web of real pages (16 hosts) with equal politeness
(trafilatura's SLEEP_TIME = our --delay), into fresh output folders, in the same run. The pages'
images point at their own hosts, as articles point at CDNs: a third of those names do not resolve
a tenth of the hosts take the connection and never answer, the rest serve a PNG. The image hosts
are names, answered by a DNS server of the bench's own (`loopback.py --dns`) as a lossy resolver
answers: half the dead names NXDOMAIN, half never answered, a fifth of the live ones 1-5 s late;
mirror asks it (MIRROR_NAMESERVERS). The tail (last page recorded to the end of the run) and the
resources deferred to a next run are reported beside pages/s.
mirror runs as a user runs it by default (`--browser auto` with Debian's chromium installed,
images on) and with `--browser never`, and again with --no-images: with dead and hanging image
hosts, the walls with and without images should stay within 15%. trafilatura does not fetch
images. Each kind's ratio to trafilatura's CLI is taken within each round.

Each measured run reports wall time, CPU time (all processes), CPU/wall, peak RSS and how busy the
rest of the machine was meanwhile (from /proc/stat, minus our processes and the loopback web);
`--record` refuses to record a run that was not quiet.

    python bench/throughput.py --pages 1000 --latency-ms 0 50 --rounds 3 --record
    python bench/throughput.py --browsers always --pages 200 --latency-ms 50 --skip-trafilatura --skip-no-images --record
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import Measured, measure, report
from loopback import CORPUS, corpus_pages, images_served, page_urls, served

HERE = Path(__file__).resolve().parent
TARGETS = {0.0: 1.4, 50.0: 1.8}  # ratio to trafilatura wanted at each latency
_TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy since boot (all cores, guests excluded)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / _TICK  # minus idle and iowait


def process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Run:
    measured: Measured
    others: float  # cores the rest of the machine kept busy on average during the run
    web_cpu: float

    def describe(self, pages: int) -> str:
        m = self.measured
        return (
            f"{pages / m.wall:.1f} pages/s ({m.wall:.1f} s, {m.cpu:.1f} s CPU = {m.cpu / m.wall:.2f} cores, "
            f"{m.cpu / pages * 1000:.0f} ms CPU per page, peak RSS {m.peak_mb:.0f} MB; "
            f"rest of the machine {self.others:.2f} cores busy)"
        )


def measured_run(command: list[str], web_pid: int, on_start=None, stdout=subprocess.DEVNULL, **popen) -> Run:
    busy, web = machine_cpu(), process_cpu(web_pid)
    m = measure(command, on_start, stdout=stdout, stderr=subprocess.DEVNULL, **popen)
    web = process_cpu(web_pid) - web
    others = max(0.0, machine_cpu() - busy - m.cpu - web)
    return Run(m, others / m.wall, web)


def start_web(hosts: int, latency_ms: float, image_hosts: int, dns: bool = True) -> tuple[subprocess.Popen, int, str | None]:
    web = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "loopback.py"),
            "--hosts",
            str(hosts),
            "--latency-ms",
            str(latency_ms),
            "--image-hosts",
            str(image_hosts),
            "--lifetime",
            "3600",
            *(["--dns"] if dns else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = web.stdout.readline().split()
    if not line or line[0] != "ready":
        sys.exit("error: the loopback web did not start")
    return web, int(line[1]), (line[2] if len(line) > 2 else None)


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


def extraction_cost(passes: int = 2) -> float:
    """Mean CPU seconds per page of our extraction, measured on the corpus in a spawned process
    (so that this one stays small: a forked child inherits its parent's peak RSS)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pages, cpu, _ = pool.submit(_extract_all, passes).result()
    return cpu / pages


def mirror_command(urls: list[str], folder: Path, args: argparse.Namespace, images: bool, browser: str = "never") -> list[str]:
    """`mirror fetch` over `urls`, from a seed file written in `folder`."""
    (folder / "seeds").mkdir(parents=True)
    (folder / "seeds" / "urls.txt").write_text("\n".join(urls) + "\n")
    tabs = ["--browser-tabs", str(args.browser_tabs)] if getattr(args, "browser_tabs", None) else []  # else the default a user gets
    return [
        sys.executable,
        "-m",
        "mirror",
        "fetch",
        "seeds",
        "--delay",
        str(args.delay),
        "--per-host",
        str(args.per_host),
        "--concurrency",
        str(args.concurrency),
        "--retries",
        "1",
        "--json",
        "--browser",
        browser,
        *tabs,
        "--images" if images else "--no-images",
    ]


def run_mirror(
    urls: list[str], folder: Path, args: argparse.Namespace, web_pid: int, images: bool, nameserver: str | None = None, browser: str = "never"
) -> dict:
    command = mirror_command(urls, folder, args, images, browser)
    watched = []
    env = {**os.environ, **({"MIRROR_NAMESERVERS": nameserver} if nameserver else {})}
    with open(folder / "summary.json", "w") as out:
        if browser != "never":  # Debian's chromium, and the browser's memory measured meanwhile
            from browser import BrowserMemory, chromium_option

            command += chromium_option()
            run = measured_run(command, web_pid, lambda pid: watched.append(BrowserMemory(pid)), stdout=out, cwd=folder, env=env)
        else:
            run = measured_run(command, web_pid, stdout=out, cwd=folder, env=env)
    ended = time.monotonic()
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except ValueError:
        summary = {}
    db = sqlite3.connect(folder / "archive" / "mirror.db")
    statuses = dict(db.execute("select status, count(*) from pages group by 1").fetchall())
    resources = dict(db.execute("select coalesce(error, status), count(*) from resources group by 1").fetchall())
    result = {"run": run, "statuses": statuses, "resources": resources, "tail": summary.get("tail_seconds"), "deferred": summary.get("deferred")}
    if watched:
        memory = watched[0]
        memory.stop()
        rendered = dict(db.execute("select coalesce(render_error, capture), count(*) from pages where rendered_at is not null group by 1").fetchall())
        result["browser"] = {"rendered": rendered, "seconds": memory.render_seconds(ended), "peak_mb": memory.peak_mb}
    return result


def run_trafilatura(urls: list[str], folder: Path, args: argparse.Namespace, web_pid: int) -> dict:
    folder.mkdir(parents=True)
    (folder / "urls.txt").write_text("\n".join(urls) + "\n")
    config = folder / "settings.cfg"
    config.write_text(
        "[DEFAULT]\nDOWNLOAD_TIMEOUT = 30\nMAX_FILE_SIZE = 20000000\nMIN_FILE_SIZE = 10\n"
        f"SLEEP_TIME = {args.delay}\nUSER_AGENTS =\nCOOKIE =\nMAX_REDIRECTS = 2\nSSRF_PROTECTION = off\n"
        "INSECURE_SSL_FALLBACK = on\nMIN_EXTRACTED_SIZE = 250\nMIN_OUTPUT_SIZE = 1\nMIN_OUTPUT_COMM_SIZE = 1\n"
        "MAX_TREE_SIZE =\nEXTRACTION_TIMEOUT = 0\nMIN_DUPLCHECK_SIZE = 100\nMAX_REPETITIONS = 2\n"
        "EXTENSIVE_DATE_SEARCH = on\nEXTERNAL_URLS = off\n"
    )
    trafilatura = Path(sys.executable).with_name("trafilatura")
    command = [
        str(trafilatura),
        "--input-file",
        "urls.txt",
        "--parallel",
        str(args.parallel),
        "--output-dir",
        "out",
        "--markdown",
        "--with-metadata",
        "--config-file",
        str(config),
    ]
    run = measured_run(command, web_pid, cwd=folder)
    saved = len(list((folder / "out").glob("*"))) if (folder / "out").is_dir() else 0
    return {"run": run, "saved": saved}


def _median_run(results: list[dict]) -> dict:
    """The result whose wall time is the median (the lower middle one for an even count)."""
    ordered = sorted(results, key=lambda r: r["run"].measured.wall)
    return ordered[(len(ordered) - 1) // 2]


def _paired(values: list[float], form: str, unit: str = "") -> str:
    """The median of per-round values, with each round's: '+12% (median of 3 rounds: +10%, +12%, +19%)'."""
    shown = [format(v, form) + unit for v in values]
    return format(statistics.median(values), form) + unit + (f" (median of {len(values)} rounds: {', '.join(shown)})" if len(values) > 1 else "")


def one_latency(args: argparse.Namespace, latency: float, rows: list, verdicts: list, runs: list[Run]) -> None:
    """mirror with each browser mode (images on), mirror --no-images and trafilatura on one fresh
    loopback web, `--rounds` times.

    Each round runs them one after another, in the opposite order to the round before, so
    that a machine whose speed drifts over minutes (a VM's often does) weighs on all alike; the
    ratios are taken within each round (runs next to each other in time) and reported as medians."""
    web, port, nameserver = start_web(args.hosts, latency, args.image_hosts, not args.no_dns)
    n = args.pages
    kinds = list(args.browsers) + ([] if args.skip_no_images else ["no-images"]) + ([] if args.skip_trafilatura else ["trafilatura"])
    rounds: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="mirror-bench-") as tmp:
            urls = page_urls(n, args.hosts, port)
            for number in range(args.rounds):
                got: dict = {}
                for kind in kinds if number % 2 == 0 else kinds[::-1]:
                    folder = Path(tmp) / f"{kind}-{number}"
                    before, images_before = served(port), images_served(port)
                    if kind == "trafilatura":
                        got[kind] = run_trafilatura(urls, folder, args, web.pid)
                    elif kind == "no-images":
                        got[kind] = run_mirror(urls, folder, args, web.pid, images=False, nameserver=nameserver)
                    else:
                        got[kind] = run_mirror(urls, folder, args, web.pid, images=True, nameserver=nameserver, browser=kind)
                    got[kind]["fetched"], got[kind]["images"] = served(port) - before, images_served(port) - images_before
                rounds.append(got)
    finally:
        web.kill()
        web.wait()

    at = f"{latency:g} ms"
    runs.extend(r[kind]["run"] for r in rounds for kind in kinds)
    for browser in args.browsers:
        _mirror_rows(browser, at, n, rounds, rows, verdicts, "trafilatura" in kinds, latency)
    if "no-images" in kinds and "never" in args.browsers:
        plain = _median_run([r["no-images"] for r in rounds])
        slower = [r["never"]["run"].measured.wall / r["no-images"]["run"].measured.wall - 1 for r in rounds]
        rows.append((f"mirror fetch --browser never --no-images, {at}", plain["run"].describe(n)))
        extra = [(r["never"]["run"].measured.cpu - r["no-images"]["run"].measured.cpu) / n * 1000 for r in rounds]
        rows.append((f"  images cost in CPU, {at}", _paired(extra, "+.1f", " ms") + " a page, all processes"))
        if "trafilatura" in kinds:  # reported: what the archive's images take from the ratio
            bare = [r["trafilatura"]["run"].measured.wall / r["no-images"]["run"].measured.wall for r in rounds]
            rows.append((f"  ratio, --browser never --no-images, {at}", _paired(bare, ".2f", "x")))
        verdicts.append((f"images cost ≤ 15% of wall, {at}", _paired(slower, "+.0%"), statistics.median(slower) <= 0.15))
    if "trafilatura" in kinds:
        theirs = _median_run([r["trafilatura"] for r in rounds])
        rows.append(
            (
                f"trafilatura --parallel {args.parallel}, {at}",
                theirs["run"].describe(n) + f", {theirs['fetched']} fetched, {theirs['saved']} output files",
            )
        )


def _mirror_rows(browser: str, at: str, n: int, rounds: list[dict], rows: list, verdicts: list, against: bool, latency: float) -> None:
    """One browser mode's rows and verdicts: its run, pages and images, tail, renders, cores, memory, ratio."""
    name = "default (--browser auto)" if browser == "auto" else f"--browser {browser}"
    ours = _median_run([r[browser] for r in rounds])
    rows += [
        (f"mirror fetch {name}, images on, {at}", ours["run"].describe(n)),
        (
            f"  pages and images, {at}",
            f"{ours['fetched']} pages fetched, {json.dumps(ours['statuses'])}; {ours['images']} images served; "
            f"resources {json.dumps(ours['resources'])}",
        ),
        (
            f"  tail, {at}",
            _paired([r[browser]["tail"] or 0.0 for r in rounds], ".1f", " s") + " from the last page recorded to the run's end; "
            f"{ours['deferred']} resources deferred to the next run",
        ),
    ]
    tails = [r[browser]["tail"] or 0.0 for r in rounds]
    verdicts.append((f"tail ≤ 2 s, {name}, {at}", _paired(tails, ".1f", " s"), statistics.median(tails) <= 2.0))
    if "browser" in ours:
        browser_run = ours["browser"]
        renders = sum(browser_run["rendered"].values())
        rows += [
            (
                f"  renders, {at}",
                f"{renders} pages rendered beside the fetch ({json.dumps(browser_run['rendered'])}); the browser ran "
                f"{browser_run['seconds']:.1f} s from its start to the run's end",
            ),
            (f"  browser peak memory, {at}", f"{browser_run['peak_mb']:.0f} MB PSS (chromium and Playwright's driver)"),
        ]
        verdicts.append((f"browser peak memory < 1 GB, {name}, {at}", f"{browser_run['peak_mb']:.0f} MB", browser_run["peak_mb"] < 1024))
    cores = statistics.median(r[browser]["run"].measured.cpu / r[browser]["run"].measured.wall for r in rounds)
    peak = max(r[browser]["run"].measured.peak_mb for r in rounds)
    verdicts.append((f"both cores busy (CPU/wall ≥ 1.8), {name}, {at}", f"{cores:.2f}", cores >= 1.8))
    verdicts.append((f"peak RSS < 400 MB, {name}, {at}", f"{peak:.0f} MB", peak < 400))
    if against:
        ratios = [r["trafilatura"]["run"].measured.wall / r[browser]["run"].measured.wall for r in rounds]
        cpu = [r[browser]["run"].measured.cpu / n * 1000 for r in rounds]
        theirs = [r["trafilatura"]["run"].measured.cpu / n * 1000 for r in rounds]
        rows += [
            (f"ratio, {name}, {at}", _paired(ratios, ".2f", "x")),
            (f"  CPU per page, {name}, {at}", _paired(cpu, ".0f", " ms") + " (all processes); trafilatura's CLI " + _paired(theirs, ".0f", " ms")),
        ]
        want = TARGETS.get(latency)
        if want:
            verdicts.append((f"≥ {want}x trafilatura, {name}, {at}", _paired(ratios, ".2f", "x"), statistics.median(ratios) >= want))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--image-hosts", type=int, default=30, help="hosts the pages' images point at (a third dead, a tenth hanging)")
    parser.add_argument("--delay", type=float, default=0.0, help="politeness for both tools (seconds between requests to a host)")
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--parallel", type=int, default=4, help="trafilatura --parallel")
    parser.add_argument(
        "--browsers",
        nargs="+",
        choices=["auto", "never", "always"],
        default=["auto", "never"],
        help="the mirror fetch --browser modes to run, each against trafilatura (auto is the default a user gets)",
    )
    parser.add_argument("--browser-tabs", type=int, default=None, help="default: mirror's own (one per core, as memory allows)")
    parser.add_argument("--no-dns", action="store_true", help="image hosts as before: .invalid names the system answers, IPs for the rest")
    parser.add_argument("--skip-trafilatura", action="store_true")
    parser.add_argument("--skip-no-images", action="store_true", help="do not also run mirror with --no-images")
    parser.add_argument("--quiet", type=float, default=0.15, help="most cores the rest of the machine may keep busy in a recorded run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the three this many times at each latency, alternating their order; ratios are medians of each round's",
    )
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/throughput.jsonl (only if every run was quiet)")
    args = parser.parse_args()

    cores = os.cpu_count() or 1
    mean = extraction_cost()
    rows = [
        (
            "pages",
            f"{args.pages} ({len(corpus_pages())} distinct real pages, {args.hosts} hosts; images on "
            f"{args.image_hosts} hosts, a third not resolving, a tenth hanging"
            + ("" if args.no_dns else "; a lossy resolver: half the dead names never answered, a fifth of the live ones 1-5 s late")
            + ")"
            + (f"; {args.rounds} rounds, each run's order reversed from the round before, medians shown" if args.rounds > 1 else ""),
        ),
        ("extraction cost", f"{mean * 1000:.1f} ms CPU per page in-process, so the {cores}-core limit is {cores / mean:.1f} pages/s"),
    ]
    verdicts: list[tuple[str, str, bool]] = []
    runs: list[Run] = []
    for latency in args.latency_ms:
        one_latency(args, latency, rows, verdicts, runs)
    noisiest = max(r.others for r in runs)
    quiet = noisiest <= args.quiet
    rows.append(
        (
            "machine",
            f"the rest of the machine kept at most {noisiest:.2f} cores busy during a measured run "
            f"({'quiet' if quiet else 'NOT quiet'}: limit {args.quiet:g})",
        )
    )
    rows += [(f"target: {name}", f"{value} {'met' if ok else 'NOT met'}") for name, value, ok in verdicts]
    if args.record and not quiet:
        report("throughput", rows, record=False)
        sys.exit(f"error: not recorded: the rest of the machine kept {noisiest:.2f} cores busy (limit {args.quiet:g}); re-run on a quiet machine")
    report("throughput", rows, args.record)


if __name__ == "__main__":
    main()
