"""A small DNS server on a loopback address, for tests and benches: the resolver as the web has it.

It answers A and AAAA queries over UDP from a table it is given, and models what resolvers do
on the real web: NXDOMAIN for names that do not exist, queries dropped (no answer at all),
answers that come seconds late, and a name whose address changes between two answers (DNS
rebinding, TTL 0). Every query is counted by name.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["DNSServer"]


@dataclass
class Zone:
    addresses: dict[str, list[str]] = field(default_factory=dict)  # name -> its addresses, in order
    nxdomain: set[str] = field(default_factory=set)
    dropped: set[str] = field(default_factory=set)  # never answered
    late: dict[str, float] = field(default_factory=dict)  # name -> seconds before the answer
    rebinding: dict[str, list[str]] = field(default_factory=dict)  # name -> one address per answer, the last repeated
    ttl: int = 60


class DNSServer:
    """`with DNSServer("127.0.0.53") as dns:` ... `dns.nameserver` ("127.0.0.53:port")."""

    def __init__(self, host: str = "127.0.0.1", zone: Zone | None = None) -> None:
        self.zone = zone or Zone()
        self.queries: Counter = Counter()
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind((host, 0))
        self.host, self.port = self.socket.getsockname()
        self._answered: Counter = Counter()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def nameserver(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> DNSServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self.socket.close()

    def _serve(self) -> None:
        while not self._stop:
            try:
                query, peer = self.socket.recvfrom(4096)
            except OSError:
                return
            try:
                name, qtype, question_end = _question(query)
            except (IndexError, struct.error, UnicodeDecodeError):
                continue
            self.queries[name] += 1
            if name in self.zone.dropped:
                continue
            delay = self.zone.late.get(name)
            if delay:
                threading.Timer(delay, self._answer, (query, peer, name, qtype, question_end)).start()
            else:
                self._answer(query, peer, name, qtype, question_end)

    def _answer(self, query: bytes, peer, name: str, qtype: int, question_end: int) -> None:
        zone = self.zone
        if name in zone.nxdomain or (name not in zone.addresses and name not in zone.rebinding):
            rcode, addresses, ttl = 3, [], zone.ttl
        elif name in zone.rebinding:
            sequence = zone.rebinding[name]
            addresses = [sequence[min(self._answered[name], len(sequence) - 1)]] if qtype == 1 else []
            self._answered[name] += qtype == 1
            rcode, ttl = 0, 0
        else:
            rcode, addresses, ttl = 0, zone.addresses[name], zone.ttl
        records = []
        for address in addresses:
            ip = ipaddress.ip_address(address)
            if (qtype == 1 and ip.version == 4) or (qtype == 28 and ip.version == 6):
                records.append(b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, ttl, len(ip.packed)) + ip.packed)
        flags = 0x8180 | (query[2] & 0x01) << 8 | rcode  # a response, recursion available, the query's RD
        header = query[:2] + struct.pack("!HHHHH", flags, 1, len(records), 0, 0)
        try:
            self.socket.sendto(header + query[12:question_end] + b"".join(records), peer)
        except OSError:
            pass


def _question(query: bytes) -> tuple[str, int, int]:
    labels, position = [], 12
    while query[position]:
        length = query[position]
        labels.append(query[position + 1 : position + 1 + length].decode("ascii").lower())
        position += 1 + length
    qtype = struct.unpack("!H", query[position + 1 : position + 3])[0]
    return ".".join(labels), qtype, position + 5
