"""What a fetch run did: counts by outcome and reason, hosts down or slow, the run's tail."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from .._types import Outcome, PageResult, PageToFetch

__all__ = ["SLOW_HOST", "Resources", "SlowHost", "Summary", "outcome_of"]

SLOW_HOST = 1.0  # seconds a host's pages take on average before the summary lists it as slow


class SlowHost(NamedTuple):
    host: str
    mean_seconds: float  # a page's, the servers' time
    pages: int


@dataclass
class Resources:
    """The run's resources (images, stylesheets, what they load) as they are asked for: what the
    progress shows beside the pages, and the summary after them."""

    asked: int = 0  # requests started (a resource several pages share counts once)
    done: int = 0  # of those, answered or failed
    failed: int = 0

    def as_dict(self) -> dict:
        return {"asked": self.asked, "archived": self.done - self.failed, "failed": self.failed}


@dataclass
class Summary:
    total: int = 0
    done: int = 0
    statuses: Counter = field(default_factory=Counter)  # archived / unchanged / failed / gone
    versions: Counter = field(default_factory=Counter)  # what each capture or check found (VersionState)
    errors: Counter = field(default_factory=Counter)
    host_seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    elapsed: float = 0.0
    repaired_warcs: list[str] = field(default_factory=list)
    rendered: Counter = field(default_factory=Counter)  # browser pass outcomes
    recovered: int = 0  # pages saved from responses a crashed run had written but not recorded
    down_hosts: dict[str, tuple[str, int]] = field(default_factory=dict)  # host -> (reason, pages it took down)
    no_host_resolved: bool = False  # every failure was DNS and nothing answered: offline?
    left_pending: int = 0  # pages never really tried because the network was down (counted `left pending`): the next run tries them
    images_resumed: int = 0  # archived pages whose images this run fetches (after a reindex or an interruption)
    tail_seconds: float = 0.0  # from the last page recorded to the end of its resources
    deferred: int = 0  # resources whose host name had no answer when the run ended (a later run asks again)
    deferred_due: int = 0  # resources deferred by earlier runs that this one asks for again
    resources: Resources = field(default_factory=Resources)
    in_flight: dict[str, float] = field(default_factory=dict, repr=False)  # page requests under way -> monotonic start

    def count_down_host(self, host: str, reason: str) -> None:
        self.down_hosts[host] = (reason, self.down_hosts.get(host, (reason, 0))[1] + 1)

    def slowest_hosts(self, n: int = 5) -> list[SlowHost]:
        """Hosts whose pages took SLOW_HOST seconds or more on average (the servers' time, not
        our politeness waits), slowest first."""
        means = [SlowHost(h, sum(t) / len(t), len(t)) for h, t in self.host_seconds.items() if t and h.lower() not in self.down_hosts]
        return sorted((m for m in means if m.mean_seconds >= SLOW_HOST), key=lambda m: -m.mean_seconds)[:n]

    def as_dict(self) -> dict:
        return {
            "total": self.total,
            "done": self.done,
            "statuses": dict(self.statuses),
            "versions": dict(self.versions),
            "errors": dict(self.errors),
            "slowest_hosts": [{"host": h, "mean_seconds": round(s, 3), "pages": n} for h, s, n in self.slowest_hosts()],
            "elapsed_seconds": round(self.elapsed, 3),
            "repaired_warcs": self.repaired_warcs,
            "rendered": dict(self.rendered),
            "recovered": self.recovered,
            "down_hosts": [{"host": h, "reason": r, "pages": n} for h, (r, n) in sorted(self.down_hosts.items())],
            "no_host_resolved": self.no_host_resolved,
            "left_pending": self.left_pending,
            "images_resumed": self.images_resumed,
            "tail_seconds": round(self.tail_seconds, 3),
            "deferred": self.deferred,
            "deferred_due": self.deferred_due,
            "resources": self.resources.as_dict(),
        }

    def recount(self, was: Outcome, error: str | None, now: Outcome) -> None:
        """A page counted again (the browser pass captured it, a later page made it a duplicate):
        its count moves from what it was to what it now is."""
        for counter, key in ((self.statuses, was), (self.errors, error)):
            if key is not None:
                counter[key] -= 1
                if counter[key] <= 0:
                    del counter[key]
        self.statuses[now] += 1


def outcome_of(result: PageResult, page: PageToFetch) -> Outcome:
    """How a page's fetch counts in the summary."""
    if result.ok:
        if result.final.status == 304:
            return Outcome.UNCHANGED
        return Outcome(result.extraction.status) if result.extraction else Outcome.ARCHIVED
    return Outcome.GONE if page.has_capture else Outcome.FAILED
