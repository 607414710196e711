"""States that tell the truth when the machine is offline (issue 42 items 1 and 2): a check
judges only what was fetched, this machine's own servers answering is no sign of the network,
an offline run's summary says `left pending` from its first line to its last, a lookup without
an answer says so, and a never-archived 404 is `failed` everywhere. Servers on 127.0.0.x, the
resolver a DNS server of the test's own (tests/dnsserver.py) or a port where none answers."""

from __future__ import annotations

import errno
import io
import json
import socket

import httpx
import sqlite_utils

from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .dnsserver import DNSServer
from .webserver import article

CHECK = ("--delay", "0", "--retries", "0", "--timeout", "3")
QUICK = (*CHECK, "--workers", "1")
NAMES = ("a.test", "b.test", "c.test")


def db_of(folder) -> sqlite_utils.Database:
    return sqlite_utils.Database(folder / "archive" / "mirror.db")


def closed_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def far_list(tmp_path, web, name: str = "far.md") -> list[str]:
    """A reading list of pages on host names (served by `web` once a resolver names it)."""
    for host in NAMES:
        web.add(f"/{host}", article(f"来自 {host}", f"{host} 的正文。"))
    urls = [f"http://{host}:{web.port}/{host}" for host in NAMES]
    (tmp_path / name).write_text("".join(f"- {url}\n" for url in urls), encoding="utf-8")
    return urls


def statuses(tmp_path, urls) -> set[tuple[str, str | None]]:
    pages = db_of(tmp_path)["pages"]
    return {(pages.get(url)["status"], pages.get(url)["error"]) for url in urls}


def test_an_offline_check_leaves_pending_pages_to_fetch(cli, tmp_path, web, monkeypatch):
    local = web.add("/local", article("本地文章", "这台机器上的服务器，离线也会回答。"))
    (tmp_path / "local.md").write_text(f"- {local}\n", encoding="utf-8")
    assert cli("fetch", "local.md", *QUICK).exit_code == 0
    far = far_list(tmp_path, web)
    assert cli("links", "far.md").exit_code == 0  # recorded, never fetched
    for resolver in (f"127.0.0.1:{closed_udp_port()}", None):  # no answer at all; "no such name" for every name
        with DNSServer("127.0.0.1") as dns:
            monkeypatch.setenv("MIRROR_NAMESERVERS", resolver or dns.nameserver)
            result = cli("check", "--older-than", "0", *CHECK)
        assert result.exit_code == 0, result.output
        assert "checked 1 page: 1 unchanged" in result.stderr  # what was fetched, and nothing else
        assert statuses(tmp_path, far) == {("pending", None)}
    assert db_of(tmp_path).execute("select count(*) from versions where page_url like 'http://_.test%'").fetchone()[0] == 0
    with DNSServer("127.0.0.1") as dns:  # online again: fetch fetches them, no --retry-failed needed
        dns.zone.addresses.update({host: ["127.0.0.1"] for host in NAMES})
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", "far.md", *QUICK)
    assert result.exit_code == 0, result.output
    assert statuses(tmp_path, far) == {("archived", None)}


def test_a_check_while_offline_blames_no_host(cli, tmp_path, web, monkeypatch):
    """Pages that failed before are asked again by a check; offline, with only this machine's
    server answering and the resolver saying "no such name" to everything, no name is remembered
    as dead, no host counted dead, and the pages are left for the next fetch."""
    local = web.add("/local", article("本地文章", "这台机器上的服务器。"))
    (tmp_path / "local.md").write_text(f"- {local}\n", encoding="utf-8")
    assert cli("fetch", "local.md", *QUICK).exit_code == 0
    far = far_list(tmp_path, web)
    for host in NAMES:
        web.add(f"/{host}", b"busy", status=503)
    with DNSServer("127.0.0.1") as dns:
        dns.zone.addresses.update({host: ["127.0.0.1"] for host in NAMES})
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        assert cli("fetch", "far.md", *QUICK).exit_code == 0
    assert statuses(tmp_path, far) == {("failed", "http_503")}
    for host in NAMES:
        web.add(f"/{host}", article(f"来自 {host}", f"{host} 的正文。"))
    with DNSServer("127.0.0.1") as dns:  # offline: "no such name" for every name
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("check", "--older-than", "0", *CHECK, "--json")
    assert result.exit_code == 0, result.output
    db = db_of(tmp_path)
    assert db["dead_names"].count == 0
    assert db.execute("select count(*) from versions where host_dead = 1").fetchone()[0] == 0
    assert statuses(tmp_path, far) == {("pending", None)}  # never really tried: the next fetch tries them
    with DNSServer("127.0.0.1") as dns:
        dns.zone.addresses.update({host: ["127.0.0.1"] for host in NAMES})
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", "far.md", "--retry-failed", *QUICK)
    assert result.exit_code == 0, result.output
    assert statuses(tmp_path, far) == {("archived", None)}


def test_this_machines_own_server_is_no_sign_of_the_network(tmp_path, web, monkeypatch):
    """Offline, a page on 127.0.0.1 answers while every name goes unanswered: the pages on names
    were never really tried, and the summary counts them `left pending`, not failed."""
    local = web.add("/here", article("本地", "本机的页面。"))
    far = far_list(tmp_path, web)
    (tmp_path / "mixed.md").write_text(f"- {local}\n" + "".join(f"- {url}\n" for url in far), encoding="utf-8")
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(read_seeds([tmp_path / "mixed.md"], base=tmp_path))
        summary = run(archive, FetchOptions(delay=0, retries=2, backoff=0.05, timeout=3, workers=1))
    assert statuses(tmp_path, [local]) == {("archived", None)}
    assert statuses(tmp_path, far) == {("pending", None)}
    assert summary.left_pending == 3 and summary.no_host_resolved
    assert dict(summary.statuses) == {"archived": 1, "left pending": 3} and dict(summary.errors) == {}


def test_an_offline_fetch_tells_one_story(cli, tmp_path, web, monkeypatch):
    """The bar's last counts, the per-page lines' end and the JSON summary all say `left pending`."""
    far_list(tmp_path, web)
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")
    result = cli("fetch", "far.md", *QUICK, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["statuses"] == {"left pending": 3} and summary["left_pending"] == 3 and summary["errors"] == {}
    result = cli("fetch", "far.md", *QUICK)
    assert result.stderr.strip().splitlines()[-1].endswith("3 pages left pending: the next `mirror fetch` tries them")
    assert "failed" not in result.stderr.strip().splitlines()[-1]

    from rich.console import Console

    from mirror.cli.progress import FetchReporter

    terminal = io.StringIO()
    reporter = FetchReporter(Console(file=terminal, force_terminal=True, width=160))
    with Archive(tmp_path / "archive") as archive, archive.lock():
        run(archive, FetchOptions(delay=0, retries=0, timeout=3, workers=1), on_page=reporter.page, on_start=reporter.start)
    reporter.stop()
    last = terminal.getvalue().rsplit("\r", 1)[-1]
    assert "3/3" in last and "left pending 3" in last and "failed" not in last, last


def test_a_lookup_without_an_answer_says_so(cli, tmp_path, web, monkeypatch):
    """A resolver that never answers for one name, while it answers for another: the page fails
    (the network works), with a message that says the lookup got no answer, not that the name
    does not exist."""
    ok = web.add("/fine", article("能解析", "这个名字有地址。"))
    web.add("/silent", article("没有回答", "这个名字的查询没有回答。"))
    with DNSServer("127.0.0.1") as dns:
        dns.zone.addresses["fine.test"] = ["127.0.0.1"]
        dns.zone.dropped.add("silent.test")
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        fine, silent = ok.replace("127.0.0.1", "fine.test"), f"http://silent.test:{web.port}/silent"
        result = cli("fetch", fine, silent, *QUICK, "--timeout", "1.5")
    assert result.exit_code == 0, result.output
    row = db_of(tmp_path)["pages"].get(silent)
    assert (row["status"], row["error"]) == ("failed", "dns")
    assert "no answer" in row["error_message"] and "not found" not in row["error_message"], row["error_message"]


def test_no_route_to_the_network_is_this_machines_state(tmp_path):
    """A connection that fails with no route to the network (ENETUNREACH) never takes its host
    down and, with several such hosts and nothing answering, the network is down."""
    from mirror.http.host_health import OFFLINE_AFTER, HostHealth

    health = HostHealth(per_host=2, delay=0)
    for n in range(OFFLINE_AFTER):
        cause = OSError(errno.ENETUNREACH, "Network is unreachable")
        error = httpx.ConnectError("All connection attempts failed")
        error.__cause__ = cause
        hop = health.transport_failure(f"http://203.0.113.{n + 1}/page", error, 0.0)
        assert hop.unreached and not hop.host_dead and "no route to the network" in hop.message
    assert health.down == {} and health.offline and health.looks_offline()


def test_a_never_archived_404_is_failed_in_link_health_and_the_list(cli, tmp_path, web):
    url = web.url("/missing-page")
    (tmp_path / "list.md").write_text(f"- {url}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    for _ in range(2):  # after the fetch, and after a check that finds it 404 again
        db = db_of(tmp_path)
        assert (db["pages"].get(url)["status"], db["pages"].get(url)["error"]) == ("failed", "http_404")
        assert [(row["reading_list"], row["health"]) for row in db.query("select * from link_health")] == [("list.md", "failed")]
        result = cli("check", "--older-than", "0", *CHECK, "--json")
        assert result.exit_code == 0 and json.loads(result.stdout)["states"] == {"failed": 1}
