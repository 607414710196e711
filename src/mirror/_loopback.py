"""DNS rebinding guard for `mirror serve`.

A page on the web can point its own host name at 127.0.0.1 and then read
anything a local server answers, as same-origin. A server that only answers
requests addressed to a loopback name (the Host header) is out of its reach.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["is_loopback_address", "loopback_hosts_only"]

_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::\d{1,5})?")


def is_loopback_address(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost names: only this machine can connect."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_hosts_only(app, allowed: set[str] = frozenset()):
    """Wrap an ASGI app: HTTP requests whose Host is not a loopback name (or in `allowed`) get a 400."""
    allowed = {name.lower() for name in allowed}

    async def guarded(scope, receive, send):
        if scope["type"] == "http":  # datasette serves no websockets; lifespan passes through
            header = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            match = _HOST_PORT.fullmatch(header.strip())
            name = match[1] if match else ""
            if not name or not (is_loopback_address(name) or name.lower() in allowed):
                body = b"mirror serve answers only requests addressed to localhost (see --allow-host)\n"
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
