"""`mirror fetch --ray` against the same fetch in one process, on this machine: the cluster's cost.

On one machine a Ray cluster has nothing to add (the same cores extract either way), so the
figure is the overhead: the wall time of `mirror fetch --ray --shards S` over a local Ray head
(started once, before the rounds, as `ray start --head` in a temporary folder: its start-up is
reported apart) against `mirror fetch` alone, on the same loopback web of real pages (16 hosts,
bench/loopback.py), alternating within each round. Target: at most 20 % more wall time on 2 cores.

Reported per run: wall, pages/s, CPU (the command's processes, and for Ray also every process of
the head's processes: its workers are the raylet's children, not the command's), and how busy the
machine was before (load average). Per worker: pages/s per fetching worker and CPU per page.

    python bench/cluster.py --pages 600 --latency-ms 50 --rounds 3 --shards 2 [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measure, report
from loopback import page_urls
from throughput import mirror_command, start_web

TARGET = 0.20  # at most this much more wall time on Ray, on one machine
MARK = "MIRROR_BENCH_RAY_HEAD"  # in the environment of the head's processes, which its workers inherit (they start sessions of their own)


def start_head(cpus: int, temp: Path) -> tuple[subprocess.Popen, str, float]:
    """A local Ray head of `cpus` CPUs (its own process group): (process, address, seconds to start)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray = Path(sys.executable).parent / "ray"
    started = time.monotonic()
    env = {**os.environ, MARK: str(temp), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [str(ray), "start", "--head", "--block", "--num-cpus", str(cpus), "--port", str(port), "--node-ip-address", "127.0.0.1"]
        + ["--temp-dir", str(temp), "--include-dashboard=false", "--disable-usage-stats"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while time.monotonic() - started < 120:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if head.poll() is not None:
            sys.exit("error: the Ray head did not start")
        time.sleep(0.2)
    return head, f"127.0.0.1:{port}", time.monotonic() - started


def stop_head(head: subprocess.Popen) -> None:
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)


_TICK = os.sysconf("SC_CLK_TCK")


class ClusterCpu(threading.Thread):
    """CPU seconds of the bench's Ray head's processes (the raylet reaps its workers without
    accounting for them: a worker that ends is counted as of its last sample, 0.2 s apart)."""

    def __init__(self, mark: str):
        super().__init__(daemon=True)
        self.mark, self.seen, self.stop = f"{MARK}={mark}".encode(), {}, threading.Event()
        self.start_at = self.sample()

    def sample(self) -> float:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if self.mark not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                self.seen[(entry.name, fields[19])] = sum(int(v) for v in fields[11:13]) / _TICK  # (pid, start time): utime + stime
            except (OSError, IndexError):
                continue
        return sum(self.seen.values())

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.sample()

    def used(self) -> float:
        self.stop.set()
        self.join()
        return self.sample() - self.start_at


def one_run(urls: list[str], args: argparse.Namespace, ray: str | None, mark: str) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        command = mirror_command(urls, folder, args, images=args.images)
        env = dict(os.environ)
        if ray:
            command += ["--ray", "--shards", str(args.shards)]
            env |= {"RAY_ADDRESS": ray, "RAY_AUTH_MODE": "disabled"}
        load = os.getloadavg()[0]
        cluster = ClusterCpu(mark)
        if ray:
            cluster.start()
        with open(folder / "summary.json", "w") as out:
            measured = measure(command, stdout=out, stderr=subprocess.DEVNULL, cwd=folder, env=env)
        cluster = cluster.used() if ray else 0.0
        summary = json.loads((folder / "summary.json").read_text() or "{}")
        return {
            "wall": measured.wall,
            "elapsed": summary.get("elapsed_seconds", 0.0),  # the run itself, without connecting or starting
            "cpu": measured.cpu + cluster,
            "driver_cpu": measured.cpu,  # on Ray: the driver alone (recording, the run's bookkeeping)
            "load": load,
            "statuses": summary.get("statuses"),
            "ok": measured.returncode == 0,
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shards", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="the Ray head's CPUs")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--images", action="store_true", help="fetch the articles' images too (off: the corpus points at the real web)")
    parser.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    args = parser.parse_args()

    web, port, _ = start_web(args.hosts, args.latency_ms, 0, dns=False)
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # (short: Ray's sockets live in it)
    head, address, head_seconds = start_head(args.cpus, temp)
    try:
        urls = page_urls(args.pages, args.hosts, port)
        runs: dict[str, list[dict]] = {"one process": [], "ray": []}
        for n in range(args.rounds):
            for kind in ["one process", "ray"] if n % 2 == 0 else ["ray", "one process"]:  # alternating: a drift of the machine hits both
                result = one_run(urls, args, address if kind == "ray" else None, str(temp))
                runs[kind].append(result)
                said = f"{result['wall']:.1f} s wall, run {result['elapsed']:.1f} s, CPU {result['cpu']:.1f} s, load {result['load']:.2f}"
                print(f"round {n + 1} {kind}: {said}, {result['statuses']}", file=sys.stderr)
    finally:
        stop_head(head)
        web.terminate()
        shutil.rmtree(temp, ignore_errors=True)

    local, ray = (statistics.median(r["wall"] for r in runs[k]) for k in ("one process", "ray"))
    local_run, ray_run = (statistics.median(r["elapsed"] for r in runs[k]) for k in ("one process", "ray"))
    overheads = [on["wall"] / alone["wall"] - 1 for alone, on in zip(runs["one process"], runs["ray"], strict=True)]
    cpu = {k: statistics.median(r["cpu"] for r in runs[k]) for k in runs}
    driver = statistics.median(r["driver_cpu"] for r in runs["ray"])
    loads = [r["load"] for k in runs for r in runs[k]]
    overhead = statistics.median(overheads)
    rows = [
        ("pages, hosts, latency", f"{args.pages}, {args.hosts}, {args.latency_ms:g} ms; --delay {args.delay:g} --per-host {args.per_host}"),
        (
            "one process (median wall)",
            f"{local:.1f} s ({args.pages / local:.1f} pages/s; the run {local_run:.1f} s); CPU {cpu['one process']:.1f} s",
        ),
        (
            f"--ray --shards {args.shards} (median wall)",
            f"{ray:.1f} s ({args.pages / ray:.1f} pages/s; the run {ray_run:.1f} s); CPU {cpu['ray']:.1f} s (driver and cluster)",
        ),
        (
            "overhead of Ray (median of rounds)",
            f"{overhead:+.0%} wall (rounds: {', '.join(f'{o:+.0%}' for o in overheads)}); target <= +{TARGET:.0%}",
        ),
        ("per fetching worker", f"{args.pages / ray_run / args.shards:.1f} pages/s"),
        (
            "CPU per page",
            f"one process {cpu['one process'] / args.pages * 1000:.0f} ms; on Ray {cpu['ray'] / args.pages * 1000:.0f} ms, "
            f"of which the driver {driver / args.pages * 1000:.0f} ms (recording: the one writer's share)",
        ),
        ("Ray head start (once)", f"{head_seconds:.1f} s"),
        ("load average before the runs", f"{min(loads):.2f} to {max(loads):.2f} on {os.cpu_count()} cores"),
        ("verdict", "within target" if overhead <= TARGET else "over target"),
    ]
    report("Ray cluster vs one process (bench/cluster.py)", rows, args.record)
    if not all(r["ok"] for k in runs for r in runs[k]):
        sys.exit("error: a run failed")


if __name__ == "__main__":
    main()
