"""What `mirror fetch` shows: a progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time
from datetime import timedelta

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .._types import PageResult
from .._util.text import strip_controls
from ..fetch.summary import Summary
from ..http.host_health import OFFLINE_HINT


class FetchReporter:
    def __init__(self, console: Console):
        self.console = console
        self.live = console.is_terminal
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def start(self, summary: Summary) -> None:
        for repaired in summary.repaired_warcs:
            self.console.print(f"[yellow]repaired[/] truncated WARC left by an interrupted run: {escape(str(repaired))}")
        if summary.images_resumed:
            self.console.print(
                f"fetching the images of {summary.images_resumed} articles archived before (a reindex or an interrupted run left them)"
            )
        if not summary.total:  # nothing to show progress of: the command says so in one line
            return
        if not self.live:
            self.console.print(f"fetching {summary.total} pages")
            return
        self._progress = _Progress(
            summary,
            TextColumn("[bold]fetch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            _Rate(),
            TimeElapsedColumn(),
            _Remaining(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task("fetch", total=summary.total, counts="")

    def page(self, result: PageResult, summary: Summary) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=summary.done, counts=_counts(summary))
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


SLOW_IN_FLIGHT = 5.0  # seconds a page request runs before the bar shows it
IN_FLIGHT_SHOWN = 3


class _Progress(Progress):
    """The bar, and under it the slowest page requests in flight (as wget shows its URL): a
    hanging server is named while the run waits for it."""

    def __init__(self, summary: Summary, *columns: ProgressColumn | str, **options) -> None:
        self._summary = summary  # (before rich's own set-up: it renders once at once)
        super().__init__(*columns, **options)

    def get_renderables(self):
        yield self.make_tasks_table(self.tasks)
        yield from slowest_in_flight(self._summary.in_flight, time.monotonic())


def slowest_in_flight(in_flight: dict[str, float], now: float) -> list[RenderableType]:
    try:
        flying = sorted(in_flight.items(), key=lambda item: item[1])  # (a copy: the fetcher's thread adds to it)
    except RuntimeError:
        return []
    lines: list[RenderableType] = []
    for url, since in flying[:IN_FLIGHT_SHOWN]:
        if now - since < SLOW_IN_FLIGHT:
            break
        lines.append(Text(f"  waiting {now - since:4.0f} s for {strip_controls(url)}", style="dim", no_wrap=True, overflow="ellipsis"))
    return lines


class _Rate(ProgressColumn):
    """Pages a second over the whole run so far, as of now (it falls while nothing finishes)."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.completed / max(task.elapsed or 0.0, 1e-6):.1f}/s" if task.completed else "")


class _Remaining(ProgressColumn):
    """Time left at the run's pace so far, recomputed at every refresh: it grows while a hanging
    page holds the run up, where rich's own estimate (from the last completions) stands still."""

    def render(self, task: Task) -> Text:
        if not task.completed or task.total is None or task.elapsed is None:
            return Text("-:--:--", style="progress.remaining")
        left = task.elapsed / task.completed * (task.total - task.completed)
        return Text(str(timedelta(seconds=int(left))), style="progress.remaining")


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
        table.add_row(
            f"resources deferred to the next run (host names without an answer; the tail took {summary.tail_seconds:.1f} s)", str(summary.deferred)
        )
    if summary.recovered:
        table.add_row("recovered from an interrupted run's WARC files", str(summary.recovered))
    if summary.no_host_resolved:
        table.caption = f"[red]{OFFLINE_HINT}[/]"
    return table
