"""Host names to addresses, for a crawler: asynchronous, with a short retransmit.

The C library's `getaddrinfo` retransmits a dropped query after 5 s, twice, and blocks a
thread meanwhile: against a resolver that drops some queries (lame delegations, unreachable
authoritative servers, an overloaded home router) a run's image hosts took 5-10 s each to fail.
c-ares (through aiodns) asks with a 1 s timeout, 3 tries, on the event loop, with the system's
nameservers and /etc/hosts, A and AAAA. Names only the system knows (`localhost`, `*.local`
served by mDNS), and a machine without aiodns, go to `getaddrinfo` in threads.

`MIRROR_NAMESERVERS` (or `Resolver(nameservers=...)`) names other nameservers, "ip" or
"ip:port", comma-separated: tests and the bench point it at a DNS server of their own.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiodns

__all__ = ["NAMESERVERS_ENV", "Resolver", "nameservers_from_env", "system_only"]

NAMESERVERS_ENV = "MIRROR_NAMESERVERS"
TIMEOUT = 1.0  # seconds a query waits for its answer before asking again
TRIES = 3
LOOKUP_LIMIT = 2 * TIMEOUT * TRIES  # seconds for a whole lookup: c-ares stretches its timeout after slow answers
SYSTEM_THREADS = 32  # getaddrinfo lookups at once, where the system resolves
_NOT_FOUND = {1, 4}  # ARES_ENODATA, ARES_ENOTFOUND: the name has no address


def nameservers_from_env() -> list[str] | None:
    """The nameservers `MIRROR_NAMESERVERS` names, or None (the system's). ValueError if one
    is not an address (with an optional port)."""
    text = os.environ.get(NAMESERVERS_ENV, "").strip()
    if not text:
        return None
    servers = [part.strip() for part in text.split(",") if part.strip()]
    if not servers:
        raise ValueError(f"{NAMESERVERS_ENV}={text!r} names no nameserver (ip[:port],...; unset it for the system's)")
    for server in servers:
        if server.startswith("["):  # [v6] or [v6]:port
            host, _, rest = server[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ("" if not rest else "bad")
        elif server.count(":") == 1:  # v4:port
            host, _, port = server.partition(":")
        else:  # v4, or v6 without a port
            host, port = server, ""
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        except OSError:
            raise ValueError(f"{NAMESERVERS_ENV}={text!r}: {server!r} is not an IP address (with an optional :port)") from None
        if port and not (port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"{NAMESERVERS_ENV}={text!r}: {server!r} has a bad port")
    return servers


class Resolver:
    """`await resolver.resolve(name)`: its addresses, in the order to try them; raises
    `socket.gaierror` (EAI_NONAME: the name does not exist; EAI_AGAIN: no answer in time)."""

    def __init__(self, nameservers: list[str] | None = None) -> None:
        self.nameservers = nameservers
        self._ares: aiodns.DNSResolver | None = None
        self._threads: ThreadPoolExecutor | None = None

    async def resolve(self, host: str) -> list[str]:
        name = host.lower().rstrip(".")
        ares = None if system_only(name) else self._channel()
        if ares is None:
            infos = await asyncio.get_running_loop().run_in_executor(
                self._pool(), functools.partial(socket.getaddrinfo, host, None, type=socket.SOCK_STREAM)
            )
            return list(dict.fromkeys(str(info[4][0]) for info in infos))
        import aiodns.error

        try:
            async with asyncio.timeout(LOOKUP_LIMIT):
                result = await ares.getaddrinfo(host, family=socket.AF_UNSPEC)
        except TimeoutError:
            raise socket.gaierror(socket.EAI_AGAIN, f"no answer from the nameservers within {LOOKUP_LIMIT:g} s") from None
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            message = exc.args[1] if len(exc.args) > 1 else str(exc)
            raise socket.gaierror(socket.EAI_NONAME if code in _NOT_FOUND else socket.EAI_AGAIN, message) from None
        addresses = list(dict.fromkeys(_text(node.addr[0]) for node in result.nodes))
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name has no usable address")
        return sorted(addresses, key=lambda a: ":" in a)  # IPv4 first: many servers listen on it alone

    def _channel(self):
        if self._ares is None:
            try:
                import aiodns
            except ImportError:  # the system's resolver, in threads
                return None
            self._ares = aiodns.DNSResolver(nameservers=self.nameservers, timeout=TIMEOUT, tries=TRIES)
        return self._ares

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(SYSTEM_THREADS, thread_name_prefix="mirror-lookup")
        return self._threads

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        if self._ares is not None:
            try:
                self._ares.cancel()
            except Exception:  # noqa: BLE001 - closing what may already be closed
                pass


def system_only(name: str) -> bool:
    """Names only this machine knows (`localhost`, mDNS's `.local`): looked up by the system's resolver."""
    return name == "localhost" or name.endswith((".localhost", ".local"))


def _text(address) -> str:
    return address.decode("ascii") if isinstance(address, bytes) else str(address)
