"""Host health for one run (not `check.link_health`, a link's state over time): which servers are
down (their queue fails at once, with the reason that took them down), and whether the network
works at all (nothing reached while several names failed to resolve: offline)."""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit

import httpx

from .._types import Exchange, Reason
from .failures import classify_error, errno_of, failed
from .gate import HostGate, is_ip, server_key

__all__ = ["OFFLINE_AFTER", "OFFLINE_HINT", "HostHealth"]

OFFLINE_AFTER = 3  # distinct host names whose lookup failed, with nothing reached yet: the network is down
OFFLINE_HINT = "no host name resolved in this run: check the network connection or the proxy settings"


class HostHealth:
    def __init__(self, per_host: int, delay: float):
        self.per_host, self.delay = per_host, delay
        self.gates: dict[str, HostGate] = {}
        self.down: dict[str, Exchange] = {}  # host -> the failure that took it down for this run
        self.reached = False  # some server answered: the network works
        self.answered: set[str] = set()  # hosts that sent a response in this run
        self.offline = False
        self._unresolved: set[str] = set()

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
        return failed(url, url, Reason.DNS, OFFLINE_HINT, give_up=True)

    def answer_from(self, host: str) -> None:
        self.reached = True
        self.answered.add(host)

    def transport_failure(self, url: str, exc: httpx.HTTPError, started: float) -> Exchange:
        category, message = classify_error(exc)
        if category == Reason.DNS:
            return self.dns_failure(url, exc, started)
        hop = failed(url, url, category, message, started=started)
        refused = category == Reason.CONNECT and errno_of(exc) == errno.ECONNREFUSED
        if refused:
            self.take_down(url, hop, dead=True)
        if refused or category in (Reason.RESET, Reason.PROTOCOL, Reason.TLS):
            self.reached = True  # something answered at that address: the network works
        return hop

    def dns_failure(self, url: str, exc: BaseException, started: float | None = None, *, budget: bool = False) -> Exchange:
        """NXDOMAIN takes the host down for the run; a lookup that timed out may be retried,
        unless nothing has been reached yet and several names failed: then the network is down.
        A resource's lookup that took longer than its budget takes its host down too, as a
        hanging resource host does."""
        message = str(exc)[:300] if isinstance(exc, httpx.HTTPError) else f"host name not found: {str(exc)[:300]}"
        hop = failed(url, url, Reason.DNS, message if message.startswith("host name") else f"host name not found: {message}", started=started)
        code = errno_of(exc)
        if code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)) or isinstance(exc, UnicodeError):
            self.take_down(url, hop, dead=True)
        elif budget and (urlsplit(url).netloc or "").lower() not in self.answered:
            self.take_down(url, hop)
        else:
            self._unresolved.add(urlsplit(url).hostname or "")
            if not self.reached and len(self._unresolved) >= OFFLINE_AFTER:
                self.offline = True
                for host, gate in self.gates.items():
                    if not is_ip(f"http://{host}/"):
                        gate.close()
            hop.give_up = self.offline
        return hop

    def take_down(self, url: str, failure: Exchange, *, dead: bool = False) -> None:
        """`url`'s host is down for the run; `dead`: its name does not exist or it refuses connections
        (a check on another day that finds it so again takes its pages for gone)."""
        failure.give_up = True
        failure.host_dead = dead
        self.down.setdefault((urlsplit(url).netloc or "").lower(), failure)
        self.gate(url).close()
