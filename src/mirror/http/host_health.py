"""Host health for one run (not `check.link_health`, a link's state over time): which servers are
down (their queue fails at once, with the reason that took them down), and whether the network
works at all.

Offline is the machine's own state, never a host's: lookups that get no answer, or no route to
the network, while nothing shows the network working. What shows it is a server off this machine
answering, or the resolver giving a name its addresses; this machine's own servers (127.0.0.1,
`localhost`) answer offline too, and some resolvers answer "no such name" to everything offline.
So a "no such name" makes a host dead (`host_dead`, remembered across runs) only once the
resolver has given some other name its addresses in the run."""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit

import httpx

from .._types import Exchange, Reason
from .failures import classify_error, errno_of, failed
from .gate import HostGate, is_ip, server_key

__all__ = ["OFFLINE_AFTER", "OFFLINE_HINT", "HostHealth"]

OFFLINE_AFTER = 3  # distinct host names whose lookup failed, with nothing showing the network working: it is down
OFFLINE_HINT = "no host name resolved in this run: check the network connection or the proxy settings"


class HostHealth:
    def __init__(self, per_host: int, delay: float):
        self.per_host, self.delay = per_host, delay
        self.gates: dict[str, HostGate] = {}
        self.down: dict[str, Exchange] = {}  # host -> the failure that took it down for this run
        self.reached = False  # some server answered (this machine's own too)
        self.network_works = False  # a server off this machine answered, or the resolver gave a name its addresses
        self.answered: set[str] = set()  # hosts that sent a response in this run
        self.offline = False  # decided during the run: the pages still to come fail at once, untried
        self._unanswered: set[str] = set()  # hosts whose lookup had no answer, or with no route to them
        self._nonexistent: set[str] = set()  # pages' names the resolver said do not exist

    def gate(self, url: str) -> HostGate:
        """The gate of the server `url` names (`server_key`)."""
        key = server_key(url)
        if key not in self.gates:
            self.gates[key] = HostGate(self.per_host, self.delay)
        return self.gates[key]

    def refuses(self, url: str, host: str) -> bool:
        """Whether a request to `host` fails at once: the host is down, or the network is."""
        return host in self.down or (self.offline and not is_ip(url))

    def refused(self, url: str, host: str) -> Exchange:
        """A request to a host that is down for this run: failed at once, same reason, no waiting."""
        if host in self.down:
            cause = self.down[host]
            refusal = failed(url, url, cause.error or Reason.CONNECT, cause.message or "", give_up=True)
            refusal.host_dead = cause.host_dead
            return refusal
        refusal = failed(url, url, Reason.DNS, OFFLINE_HINT, give_up=True)
        refusal.unreached = True
        return refusal

    def answer_from(self, host: str, *, loopback: bool = False) -> None:
        """A server sent something; off this machine (not `loopback`), that shows the network works."""
        self.reached = True
        self.answered.add(host)
        self.network_works = self.network_works or not loopback

    def name_resolved(self) -> None:
        """The resolver gave a name its addresses: it works, and its "no such name" can be believed."""
        self.network_works = True

    def looks_offline(self) -> bool:
        """At the run's end: whether its failed lookups (and routes) were this machine's state,
        so that the pages they failed were never really tried. Decided during the run
        (`offline`), or: nothing showed the network working, some names failed, and either
        nothing answered at all, or only this machine's own servers did while every failed name
        had no answer (a resolver that says "no such name" to a few names is believed; to
        OFFLINE_AFTER names or more, with nothing resolved, it is not)."""
        if self.offline:
            return True
        failed_names = self._unanswered | self._nonexistent
        if self.network_works or not failed_names:
            return False
        return not self.reached or not self._nonexistent or len(failed_names) >= OFFLINE_AFTER

    def transport_failure(self, url: str, exc: BaseException, started: float, *, loopback: bool = False) -> Exchange:
        """A request that got no answer: its reason, and what it says of the host and the network."""
        if isinstance(exc, httpx.HTTPError):
            category, message = classify_error(exc)
        else:  # an OSError the transport let through (ssl.SSLError too)
            category, message = Reason.CONNECT, str(exc) or type(exc).__name__
        if category == Reason.DNS:
            return self.dns_failure(url, exc, started)
        code = errno_of(exc)
        if code == errno.ENETUNREACH:  # this machine has no route to the network: its state, not the host's
            hop = failed(url, url, Reason.CONNECT, f"no route to the network (is this machine offline?): {message}", started=started)
            hop.unreached = True
            self._failed_to_reach(urlsplit(url).hostname or "", hop)
            return hop
        hop = failed(url, url, category, message, started=started)
        refused = category == Reason.CONNECT and code == errno.ECONNREFUSED
        if refused:
            self.take_down(url, hop, dead=True)
        if refused or category in (Reason.RESET, Reason.PROTOCOL, Reason.TLS):
            self.reached = True  # something answered at that address
            self.network_works = self.network_works or not loopback
        return hop

    def dns_failure(self, url: str, exc: BaseException, started: float | None = None, *, budget: bool = False) -> Exchange:
        """NXDOMAIN takes the host down for the run (dead, once the resolver has shown it works);
        a lookup without an answer may be retried, unless nothing shows the network working and
        several names failed so: then the network is down. A resource's (`budget`) lookup that
        took longer than its budget takes its host down too, as a hanging resource host does.
        Only pages' names tell whether the run is offline (`_failed_to_reach`, `looks_offline`)."""
        code = errno_of(exc)
        name = urlsplit(url).hostname or ""
        if code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)) or isinstance(exc, UnicodeError):
            hop = failed(url, url, Reason.DNS, _said(exc, "host name not found"), started=started)
            if not budget:
                self._nonexistent.add(name)
            self.take_down(url, hop, dead=self.network_works)
            return hop
        hop = failed(url, url, Reason.DNS, _said(exc, "host name lookup failed"), started=started)  # (no answer: not "not found")
        hop.unreached = True
        if not budget:
            self._failed_to_reach(name, hop)
        elif (urlsplit(url).netloc or "").lower() not in self.answered:
            self.take_down(url, hop)
        return hop

    def _failed_to_reach(self, host: str, hop: Exchange) -> None:
        """A page's host whose name had no answer, or no route to a host: with OFFLINE_AFTER of them
        and nothing showing the network working, it is down; the pages still to come fail at once,
        untried. (A resource's lookup without an answer does not count: a lossy resolver with a
        page's images on dead names must not stop a run whose pages answer.)"""
        self._unanswered.add(host)
        if not self.offline and not self.network_works and len(self._unanswered) >= OFFLINE_AFTER:
            self.offline = True
            for key, gate in self.gates.items():
                if not is_ip(f"http://{key}/"):
                    gate.close()
        hop.give_up = self.offline

    def take_down(self, url: str, failure: Exchange, *, dead: bool = False) -> None:
        """`url`'s host is down for the run; `dead`: its name does not exist or it refuses connections
        (a check on another day that finds it so again takes its pages for gone)."""
        failure.give_up = True
        failure.host_dead = dead
        self.down.setdefault((urlsplit(url).netloc or "").lower(), failure)
        self.gate(url).close()


def _said(exc: BaseException, what: str) -> str:
    """A lookup's failure in a person's words: `what` happened, then what the resolver said."""
    said = exc.args[1] if isinstance(exc, OSError) and len(exc.args) == 2 and isinstance(exc.args[1], str) else str(exc)  # (no "[Errno -3]")
    text = said[:300] or type(exc).__name__
    return text if text.startswith(what) else f"{what}: {text}"
