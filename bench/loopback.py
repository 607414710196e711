"""A loopback web of real saved pages for benchmarks.

Serves ../shared/corpus pages on 127.0.0.1 ... 127.0.0.H (one "host" each),
all on one port, with an optional delay per response to look like the real
web. `/p/<n>/<path>` serves corpus file <path>, so one page can stand under
many distinct URLs. Run as a script it prints `ready <port>` and serves until
killed or until --lifetime seconds have passed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cache: dict[str, bytes] = {}
    latency = 0.0
    served = 0  # pages answered with 200, read at /__served
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/__served":
            body = str(Handler.served).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        parts = self.path.split("/", 3)
        rel = parts[3] if len(parts) == 4 and parts[1] == "p" else ""
        body = self.cache.get(rel)
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
        return int(response.read())


def serve(hosts: int, port: int, latency_ms: float) -> list[ThreadingHTTPServer]:
    Handler.cache = {rel: (CORPUS / rel).read_bytes() for rel in corpus_pages()}
    Handler.latency = latency_ms / 1000
    servers = []
    for h in range(1, hosts + 1):
        server = ThreadingHTTPServer((f"127.0.0.{h}", port), Handler)
        server.daemon_threads = True
        server.request_queue_size = 128
        port = server.server_address[1]  # the first picks a free port, the rest share it
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--lifetime", type=float, default=3600, help="stop by itself after this many seconds")
    args = parser.parse_args()
    servers = serve(args.hosts, args.port, args.latency_ms)
    print(f"ready {servers[0].server_address[1]}", flush=True)
    time.sleep(args.lifetime)


if __name__ == "__main__":
    main()
