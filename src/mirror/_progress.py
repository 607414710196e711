"""What `mirror fetch` shows: a progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.markup import escape
from rich.table import Table

from ._text import strip_controls
from ._client import OFFLINE_HINT
from .fetch import PageResult, Summary


class FetchReporter:
    def __init__(self, console: Console):
        self.console = console
        self.live = console.is_terminal
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started = time.monotonic()

    def start(self, summary: Summary) -> None:
        for repaired in summary.repaired_warcs:
            self.console.print(f"[yellow]repaired[/] truncated WARC left by an interrupted run: {escape(str(repaired))}")
        if summary.images_resumed:
            self.console.print(f"fetching the images of {summary.images_resumed} articles archived before (a reindex or an interrupted run left them)")
        if not self.live:
            self.console.print(f"fetching {summary.total} pages")
            return
        self._progress = Progress(
            TextColumn("[bold]fetch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task("fetch", total=summary.total, counts="", rate="")

    def page(self, result: PageResult, summary: Summary) -> None:
        if self._progress is not None and self._task is not None:
            counts = _counts(summary)
            rate = summary.done / max(time.monotonic() - self._started, 1e-6)
            self._progress.update(self._task, completed=summary.done, counts=counts, rate=f"{rate:.1f}/s")
            return
        final = result.final
        what = "ok" if result.ok else final.error
        status = final.status if final.status is not None else "-"
        extra = f"  ({final.message})" if not result.ok and final.message else ""
        via = f"  via {final.final_url}" if result.ok and final.final_url != result.url else ""
        # a plain line, written directly: rich markup costs more than the page when piped
        line = f"[{summary.done}/{summary.total}] {what} {status} {result.url}{via}{extra}"
        self.console.file.write(strip_controls(line.replace("\n", " ")) + "\n")

    def render(self, url: str, outcome: str, summary: Summary) -> None:
        """One page rendered in the browser pass (after the HTTP bar is full)."""
        if self._progress is not None and self._task is not None:  # a challenge got past is archived now
            self._progress.update(self._task, counts=_counts(summary))
        self.console.print(f"[dim]browser[/] {sum(summary.rendered.values())}: {escape(outcome)} {escape(url)}", highlight=False)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _counts(summary: Summary) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))


DOWN_HOSTS_SHOWN = 8


def summary_table(summary: Summary) -> Table:
    table = Table(title=f"{summary.done} of {summary.total} pages in {summary.elapsed:.1f} s")
    table.add_column("outcome")
    table.add_column("pages", justify="right")
    for status, count in summary.statuses.most_common():
        table.add_row(status, str(count))
    for error, count in summary.errors.most_common():
        table.add_row(escape(f"  reason: {error}"), str(count))
    for outcome, count in summary.rendered.most_common():
        table.add_row(escape(f"browser: {outcome}"), str(count))
    down = sorted(summary.down_hosts.items(), key=lambda item: -item[1][1])
    for host, (reason, pages) in down[:DOWN_HOSTS_SHOWN]:
        table.add_row(escape(strip_controls(f"host down: {host} ({reason})")), str(pages))
    if len(down) > DOWN_HOSTS_SHOWN:
        rest = down[DOWN_HOSTS_SHOWN:]
        table.add_row(f"host down: {len(rest)} more hosts (--json lists them)", str(sum(n for _, (_, n) in rest)))
    for host, seconds, pages in summary.slowest_hosts(3):
        table.add_row(escape(strip_controls(f"slow host: {host}")), f"{seconds:.2f} s × {pages}")
    if summary.deferred:
        table.add_row(f"resources deferred to the next run (host names without an answer; the tail took {summary.tail_seconds:.1f} s)", str(summary.deferred))
    if summary.recovered:
        table.add_row("recovered from an interrupted run's WARC files", str(summary.recovered))
    if summary.no_host_resolved:
        table.caption = f"[red]{OFFLINE_HINT}[/]"
    return table
