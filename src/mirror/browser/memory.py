"""How much memory the browser takes: the PSS of its processes, from /proc.

PSS (proportional set size) splits pages shared between processes fairly, so
the sum over chromium's many processes is what they really cost the machine.
Linux only; elsewhere every measure is 0 and nothing is restarted for memory.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["browser_pss_mb", "descendants", "is_browser", "pss_mb"]


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def is_browser(pid: int) -> bool:
    """chromium's processes and Playwright's driver (node)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False
    return b"chrom" in command or b"node" in command


def browser_pss_mb(pid: int) -> float:
    """The PSS of the browser processes under `pid`, in MB."""
    return sum(pss_mb(p) for p in descendants(pid) if is_browser(p))
