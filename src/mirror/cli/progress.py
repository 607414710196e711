"""What `mirror fetch` and `mirror check` show: on a terminal a bar of pages (labelled `fetch` or
`check`, its counts those the run's summary ends with) and, once a page's images and stylesheets
are asked for, a bar of those resources beside it; plain lines otherwise."""

from __future__ import annotations

import time
from datetime import timedelta

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .._types import PageResult
from .._util.text import count, strip_controls
from ..check.report import state_word
from ..fetch.summary import Summary
from ..http.host_health import OFFLINE_HINT

RESOURCES = "resources"  # the second bar's label: images, stylesheets and what they load
DEFERRED = "images deferred: their host names had no answer yet (a later run asks again, after 10 minutes, then longer)"


class FetchReporter:
    def __init__(self, console: Console, label: str = "fetch"):
        self.console, self.label = console, label  # `fetch`, or `check` (its counts are what each check found)
        self.live = console.is_terminal
        self._progress: _Progress | None = None
        self._task: TaskID | None = None
        self._summary: Summary | None = None

    def start(self, summary: Summary) -> None:
        self._summary = summary
        for repaired in summary.repaired_warcs:
            self.console.print(f"[yellow]repaired[/] truncated WARC left by an interrupted run: {escape(str(repaired))}")
        if summary.images_resumed:
            self.console.print(
                f"fetching the images of {count(summary.images_resumed, 'article')} archived before (a reindex or an interrupted run left them)"
            )
        if summary.deferred_due:
            self.console.print(f"asking again for {count(summary.deferred_due, 'image')} whose host names had no answer in an earlier run")
        if not summary.total:  # nothing to show progress of: the command says so in one line
            return
        if not self.live:
            self.console.print(f"{self.label}ing {count(summary.total, 'page')}")
            return
        self._progress = _Progress(
            summary,
            TextColumn("[bold]{task.description}"),
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
        self._task = self._progress.add_task(self.label, total=summary.total, counts="")

    def page(self, result: PageResult, summary: Summary) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=summary.done, counts=self._counts(summary))
            return
        final = result.final
        what = "ok" if result.ok else final.error
        status = final.status if final.status is not None else "-"
        extra = f"  ({final.message})" if not result.ok and final.message else ""
        via = f"  via {final.final_url}" if result.ok and final.final_url != result.url else ""
        # a plain line, written directly: rich markup costs more than the page when piped
        line = f"[{summary.done}/{summary.total}] {what} {status} {result.url}{via}{extra}"
        self.console.file.write(strip_controls(line.replace("\n", " ")) + "\n")

    def tail(self, summary: Summary) -> None:
        """Every page is recorded and their resources are still being fetched: the run goes on,
        and says with what (on a terminal the resources' bar shows it)."""
        if self._progress is None:
            resources = summary.resources
            self.console.file.write(
                f"{count(summary.done, 'page')} done; their images and stylesheets are still being fetched "
                f"({resources.done} of {resources.asked} so far, each host at its --delay)\n"
            )

    def render(self, url: str, outcome: str, summary: Summary) -> None:
        """One page rendered in the browser pass (after the HTTP bar is full)."""
        if self._progress is not None and self._task is not None:  # a challenge got past is archived now
            self._progress.update(self._task, counts=self._counts(summary))
        self.console.print(f"[dim]browser[/] {sum(summary.rendered.values())}: {escape(outcome)} {escape(url)}", highlight=False)

    def stop(self) -> None:
        """The bars' last counts are the summary's (pages the run left pending after all, a
        page a later one made a duplicate, every resource done)."""
        if self._progress is not None:
            if self._task is not None and self._summary is not None:
                self._progress.update(self._task, completed=self._summary.done, counts=self._counts(self._summary))
                self._progress.refresh()
            self._progress.stop()
            self._progress = None

    def _counts(self, summary: Summary) -> str:
        if self.label == "check":  # what each check found, in the words of the check's report
            return ", ".join(f"{state_word(state)} {n}" for state, n in sorted(summary.versions.items()))
        return ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))


SLOW_IN_FLIGHT = 5.0  # seconds a page request runs before the bar shows it
IN_FLIGHT_SHOWN = 3


class _Progress(Progress):
    """The bar, and under it the slowest page requests in flight (as wget shows its URL): a
    hanging server is named while the run waits for it."""

    def __init__(self, summary: Summary, *columns: ProgressColumn | str, **options) -> None:
        self._summary = summary  # (before rich's own set-up: it renders once at once)
        self._resources: TaskID | None = None
        self._adding = False
        super().__init__(*columns, **options)

    def get_renderables(self):
        self._resources_bar()
        yield self.make_tasks_table(self.tasks)
        yield from slowest_in_flight(self._summary.in_flight, time.monotonic())

    def _resources_bar(self) -> None:
        """The resources' bar, from the run's counts at each refresh (they are asked for as pages
        are recorded): shown once the first is asked for."""
        resources = self._summary.resources
        if not resources.asked or self._adding:
            return
        if self._resources is None:
            self._adding = True  # (adding a task refreshes the display, which comes back here)
            try:
                self._resources = self.add_task(RESOURCES, total=resources.asked, counts="")
            finally:
                self._adding = False
        counts = f"failed {resources.failed}" if resources.failed else ""
        self.update(self._resources, total=resources.asked, completed=resources.done, counts=counts)


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


DOWN_HOSTS_SHOWN = 8


def summary_table(summary: Summary) -> Table:
    table = Table(title=f"{summary.done} of {count(summary.total, 'page')} in {summary.elapsed:.1f} s")
    table.add_column("outcome")
    table.add_column("pages", justify="right")
    for status, n in summary.statuses.most_common():
        table.add_row(status, str(n))
    for error, n in summary.errors.most_common():
        table.add_row(escape(f"  reason: {error}"), str(n))
    for outcome, n in summary.rendered.most_common():
        table.add_row(escape(f"browser: {outcome}"), str(n))
    down = sorted(summary.down_hosts.items(), key=lambda item: -item[1][1])
    for host, (reason, pages) in down[:DOWN_HOSTS_SHOWN]:
        table.add_row(escape(strip_controls(f"host down: {host} ({reason})")), str(pages))
    if len(down) > DOWN_HOSTS_SHOWN:
        rest = down[DOWN_HOSTS_SHOWN:]
        table.add_row(f"host down: {count(len(rest), 'more host', 'more hosts')} (--json lists them)", str(sum(n for _, (_, n) in rest)))
    for host, seconds, pages in summary.slowest_hosts(3):
        table.add_row(escape(strip_controls(f"slow host: {host}")), f"{seconds:.2f} s × {pages}")
    resources = summary.resources
    if resources.asked:
        tail = f"; the last {summary.tail_seconds:.1f} s after the last page" if summary.tail_seconds >= 0.5 else ""
        table.add_row(f"images and stylesheets fetched{tail}", str(resources.done - resources.failed))
        if resources.failed:
            table.add_row("  images and stylesheets failed", str(resources.failed))
    if summary.deferred:
        table.add_row(DEFERRED, str(summary.deferred))
    if summary.recovered:
        table.add_row("recovered from an interrupted run's WARC files", str(summary.recovered))
    if summary.no_host_resolved:
        table.caption = f"[red]{OFFLINE_HINT}[/]"
    return table
