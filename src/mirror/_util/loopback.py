"""Loopback names and addresses: only this machine can reach them.

The datasette plugin's DNS rebinding guard (plugin/_origin.py) answers, on a
loopback socket, only requests addressed to such a name.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_address"]


def is_loopback_address(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost names: only this machine can connect."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
