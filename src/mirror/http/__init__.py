"""HTTP for a crawler: the polite client (per-host gates, whole-request deadlines, bounded bodies,
redirects checked hop by hop), host names looked up by c-ares and connected to as looked up and
checked, and the recognition of anti-bot and login pages.

    client     the Client a run fetches with
    hop        one request: address rule, gate, body, capture
    connect    where a request goes: the environment's proxy, else the checked addresses
    lookups    host names looked up once each; resolver: names -> addresses (aiodns)
    blocked    anti-bot and login pages, never stored as articles
    redact     the user's cookies and tokens kept out of the WARC files
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .blocked import blocked_reason
    from .client import Client
    from .gate import Budget, HostGate, Reach
    from .host_health import OFFLINE_HINT
    from .resolver import nameservers_from_env

__all__ = ["OFFLINE_HINT", "Budget", "Client", "HostGate", "Reach", "blocked_reason", "nameservers_from_env"]

__getattr__ = lazy_exports(
    __name__,
    {
        "OFFLINE_HINT": ".host_health",
        "Budget": ".gate",
        "Client": ".client",
        "HostGate": ".gate",
        "Reach": ".gate",
        "blocked_reason": ".blocked",
        "nameservers_from_env": ".resolver",
    },
)
