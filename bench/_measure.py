"""Run a command and report its wall time, CPU time and peak RSS (with its children)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


@dataclass
class Measured:
    wall: float
    cpu: float  # user + system of the process and the children it waited for
    peak_mb: float
    returncode: int


def measure(command: list[str], on_start=None, **popen) -> Measured:
    """`on_start(pid)` is called once the process runs (to watch it meanwhile).

    Descendants whose parent ended before them (chromium's processes when Playwright's driver
    exits first) would be reaped by init, their CPU lost to "the rest of the machine": this
    process becomes their subreaper, and their CPU is counted with the command's.
    """
    _become_subreaper()
    start = time.monotonic()
    process = subprocess.Popen(command, **popen)
    if on_start:
        on_start(process.pid)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
    while True:  # orphans of the command that ended meanwhile, now ours
        try:
            pid, _, orphan = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        cpu += orphan.ru_utime + orphan.ru_stime
    return Measured(wall, cpu, peak, process.returncode)


def _become_subreaper() -> None:
    if sys.platform != "linux":
        return
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        model = cpu
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({model}), {mem:.0f} GiB, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def report(kind: str, rows: list[tuple[str, str]], record: bool) -> None:
    """Print the result table; with `record`, append it to RESULTS.md with machine, date and command."""
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    print(table)
    if record:
        command = f"python bench/{Path(sys.argv[0]).name} " + " ".join(sys.argv[1:])
        with open(RESULTS, "a", encoding="utf-8") as out:
            out.write(
                f"\n### {kind}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n\n"
                f"`{command}` on {machine()}\n\n| measure | result |\n| --- | --- |\n{table}\n"
            )
