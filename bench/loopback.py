"""A loopback web of real saved pages for benchmarks, with the real web's image hosts.

Serves ../shared/corpus pages on 127.0.0.1 ... 127.0.0.H (one "host" each),
all on one port, with an optional delay per response to look like the real
web. `/p/<n>/<path>` serves corpus file <path>, so one page can stand under
many distinct URLs. Run as a script it prints `ready <port>` and serves until
killed or until --lifetime seconds have passed.

With --image-hosts N, every `<img src>` of a served page is rewritten to one of
N image hosts, as articles point at CDNs: a third are names that do not resolve
(`imgK.invalid`), a tenth accept connections and never answer (127.0.2.K), the
rest serve a small PNG (127.0.1.K).

With --dns, the image hosts are names (`cdnK.bench.test`) that a DNS server of its own,
on 127.0.0.53, answers the way resolvers on the real web do: of the dead names half are
NXDOMAIN and half are never answered (queries dropped), a fifth of the live ones are answered
1 to 5 s late; it prints `ready <port> <nameserver>` for MIRROR_NAMESERVERS.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import cycle
from pathlib import Path

# ../shared/corpus beside the repository, or MIRROR_CORPUS (for a checkout elsewhere)
CORPUS = Path(os.environ.get("MIRROR_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")


def corpus_pages() -> list[str]:
    """Whole real pages (not fragments), as paths relative to the corpus."""
    if not CORPUS.is_dir():
        sys.exit(f"error: the page corpus is not at {CORPUS}")
    pages = sorted(CORPUS.glob("gne-zh/tests/*/*.html")) + sorted(CORPUS.glob("readability/test-pages/*/source.html"))
    return [p.relative_to(CORPUS).as_posix() for p in pages]


def page_urls(n: int, hosts: int, port: int) -> list[str]:
    pages = cycle(corpus_pages())
    return [f"http://127.0.0.{1 + i % hosts}:{port}/p/{i}/{next(pages)}" for i in range(n)]


_IMG_SRC = re.compile(rb"(<img\b[^>]*?\s(?:data-)?src\s*=\s*)([\"'])([^\"']*)\2", re.I)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16  # 4 KB, like a small figure


class ImageHosts:
    """Which image host serves image j of page n: dead, hanging or live."""

    def __init__(self, count: int, port: int, names: bool = False):
        self.count, self.port, self.names = count, port, names
        self.dead = count // 3
        self.hanging = max(1, count // 10) if count >= 3 else 0

    def url(self, n: int, j: int) -> str:
        k = zlib.crc32(f"{n}/{j}".encode()) % self.count
        if self.names:
            return f"http://cdn{k}.bench.test:{self.port}/i/{n}/{j}.png"
        if k < self.dead:
            return f"http://img{k}.invalid/i/{n}/{j}.png"
        if k < self.dead + self.hanging:
            return f"http://127.0.2.{1 + k - self.dead}:{self.port}/i/{n}/{j}.png"
        return f"http://127.0.1.{1 + k - self.dead - self.hanging}:{self.port}/i/{n}/{j}.png"

    def live(self) -> list[str]:
        return [f"127.0.1.{i}" for i in range(1, self.count - self.dead - self.hanging + 1)]

    def hang(self) -> list[str]:
        return [f"127.0.2.{i}" for i in range(1, self.hanging + 1)]

    def zone(self):
        """The DNS answers for the image host names (--dns): see the module's docstring."""
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.dnsserver import Zone

        zone = Zone(ttl=300)
        live, hanging = self.live(), self.hang()
        for k in range(self.count):
            name = f"cdn{k}.bench.test"
            if k < self.dead:
                (zone.nxdomain.add if k % 2 == 0 else zone.dropped.add)(name)
            elif k < self.dead + self.hanging:
                zone.addresses[name] = [hanging[k - self.dead]]
            else:
                zone.addresses[name] = [live[k - self.dead - self.hanging]]
                if k % 5 == 0:
                    zone.late[name] = 1.0 + (k % 5 + k % 4)  # 1 to 5 s
        return zone

    def rewrite(self, body: bytes, n: int) -> bytes:
        counter = iter(range(1 << 20))
        return _IMG_SRC.sub(lambda m: m[1] + m[2] + self.url(n, next(counter)).encode() + m[2], body)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cache: dict[str, bytes] = {}
    latency = 0.0
    served = 0  # pages answered with 200, read at /__served
    images_served = 0
    image_hosts: ImageHosts | None = None
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/__served":
            body = f"{Handler.served} {Handler.images_served}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/i/"):
            if self.latency:
                time.sleep(self.latency)
            with Handler.lock:
                Handler.images_served += 1
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)
            return
        parts = self.path.split("/", 3)
        rel = parts[3] if len(parts) == 4 and parts[1] == "p" else ""
        body = self.cache.get(rel)
        if body is not None and self.image_hosts is not None:
            body = self.image_hosts.rewrite(body, int(parts[2]) if parts[2].isdigit() else 0)
        if self.latency:
            time.sleep(self.latency)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with Handler.lock:
            Handler.served += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/html")  # no charset, like most saved pages' servers
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def served(port: int) -> int:
    """How many pages the loopback web has answered so far."""
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{port}/__served", timeout=10) as response:
        return int(response.read().split()[0])


def images_served(port: int) -> int:
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{port}/__served", timeout=10) as response:
        return int(response.read().split()[1])


def serve(hosts: int, port: int, latency_ms: float, image_hosts: int = 0, names: bool = False) -> list:
    Handler.cache = {rel: (CORPUS / rel).read_bytes() for rel in corpus_pages()}
    Handler.latency = latency_ms / 1000
    servers: list = []
    addresses = [f"127.0.0.{h}" for h in range(1, hosts + 1)]
    for address in addresses:
        servers.append(_http_server(address, port))
        port = servers[0].server_address[1]  # the first picks a free port, the rest share it
    if image_hosts:
        Handler.image_hosts = ImageHosts(image_hosts, port, names)
        servers += [_http_server(address, port) for address in Handler.image_hosts.live()]
        servers += [_hanging(address, port) for address in Handler.image_hosts.hang()]
    return servers


def _http_server(address: str, port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((address, port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _hanging(address: str, port: int) -> socket.socket:
    """A host that takes connections (the kernel completes them) and never answers."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    sock.listen(4096)
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--image-hosts", type=int, default=0, help="rewrite <img> to this many image hosts (a third dead, a tenth hanging)")
    parser.add_argument("--lifetime", type=float, default=3600, help="stop by itself after this many seconds")
    parser.add_argument("--dns", action="store_true", help="image hosts by name, answered by a lossy DNS server of our own")
    args = parser.parse_args()
    servers = serve(args.hosts, args.port, args.latency_ms, args.image_hosts, args.dns)
    if args.dns and args.image_hosts:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.dnsserver import DNSServer

        dns = DNSServer("127.0.0.53", Handler.image_hosts.zone()).__enter__()
        print(f"ready {servers[0].server_address[1]} {dns.nameserver}", flush=True)
    else:
        print(f"ready {servers[0].server_address[1]}", flush=True)
    time.sleep(args.lifetime)


if __name__ == "__main__":
    main()
