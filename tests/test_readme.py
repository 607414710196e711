"""The README's contract: its two set-up commands, CI running the second verbatim, and its quick
start, run verbatim in a fresh folder against the web it names as this machine models it (its
host names answered by a DNS server of the test's own, its https pages served on 127.0.0.1:443
with a certificate from a CA made here, `mirror serve` answering on its default port)."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .dnsserver import DNSServer
from .helpers import ROOT
from .webserver import ARTICLE


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


PAGES = {
    "/abs/2205.14135": "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
    "/Dao-AILab/flash-attention": "Dao-AILab/flash-attention: Fast and memory-efficient exact attention",
}


def quick_start() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start") :]
    return re.search(r"```sh\n(.*?)```", section, re.S)[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(folder: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signed for `hosts`."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test web's certificates")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=mirror test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=folder,
    )
    (folder / "san.cnf").write_text("subjectAltName=" + ",".join(f"DNS:{h}" for h in hosts) + "\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={hosts[0]}", "-keyout", "site.key", "-out", "site.csr", cwd=folder)
    _openssl(
        "x509",
        "-req",
        "-in",
        "site.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
        "-out",
        "site.pem",
        cwd=folder,
    )
    return folder / "ca.pem", folder / "site.pem", folder / "site.key"


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        title = PAGES.get(urlsplit(self.path).path)
        body = ARTICLE.format(title=title, body="Tiling keeps attention in fast on-chip memory. " * 8).encode() if title else b"not here"
        self.send_response(200 if title else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _wait_for_serve(process: subprocess.Popen) -> str | None:
    """The search page `mirror serve` answers, once it says it is serving (None if it never does)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen("http://127.0.0.1:8001/-/mirror/search?q=attention", timeout=5) as response:
                return response.read().decode("utf-8")
        except OSError:
            time.sleep(0.5)
    return None


def test_readme_starts_with_two_commands_in_a_virtual_environment():
    fetch, tests = readme_commands()[:2]
    for command in (fetch, tests):
        # PEP 668: a system python3 refuses `pip install` outside a virtual environment
        assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install")
    assert fetch.endswith("mirror fetch")
    assert "[test]" in tests and "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    test_command = readme_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines  # verbatim, on a line of its own


def test_readme_quick_start_names_the_commands_that_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Quick start")
    assert start < text.index("## Commands")
    assert text.index("```sh") < start  # the two set-up commands stay first


def test_the_readme_quick_start_works_verbatim(tmp_path):
    script = quick_start()
    hosts = sorted({urlsplit(url).hostname for url in re.findall(r"https://[^\s)>]+", script)})
    assert hosts, "the quick start's list links no page"
    if not _port_free(443) or not _port_free(8001):
        pytest.skip("the quick start's web needs 127.0.0.1:443 (root) and mirror serve's port 8001 free")
    ca, certificate, key = make_certificates(tmp_path, hosts)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 443), _Pages)
    server.daemon_threads = True
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    folder = tmp_path / "clone"
    folder.mkdir()
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file():
        pytest.skip("the tests do not run from a virtual environment (the quick start's `source .venv/bin/activate`)")
    (folder / ".venv").symlink_to(venv)
    try:
        with DNSServer("127.0.0.1") as dns:
            dns.zone.addresses.update({host: ["127.0.0.1"] for host in hosts})
            env = {k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"} | {
                "MIRROR_NAMESERVERS": dns.nameserver,
                "SSL_CERT_FILE": str(ca),
                "BROWSER": "true",
            }
            process = subprocess.Popen(
                ["bash", "-e", "-c", script], cwd=folder, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                page = _wait_for_serve(process)
            finally:
                os.killpg(process.pid, signal.SIGINT)
                output = process.communicate(timeout=30)[0]
    finally:
        server.shutdown()
        server.server_close()
    assert page is not None, output
    assert "archived" in output and "FlashAttention" in output, output  # fetch's summary, then search's hit
    assert "FlashAttention" in page
