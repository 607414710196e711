"""What a new user trips over in the first hour (issue 24): an offline run, one article behind two
links, `fetch FILE`, link titles, Ctrl-C, a hanging page, the command line's manners."""

from __future__ import annotations

import io
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest
import sqlite_utils

from mirror.cli.progress import FetchReporter, _Remaining, slowest_in_flight
from mirror.fetch import FetchOptions, Summary, run
from mirror.seeds import links_from_urls, parse_text
from mirror.store import Archive

from .conftest import ROOT
from .dnsserver import DNSServer
from .test_hostile import read_only
from .webserver import article

QUICK = ["--delay", "0", "--retries", "0", "--workers", "1"]


def db_of(folder) -> sqlite_utils.Database:
    return sqlite_utils.Database(folder / "archive" / "mirror.db")


def closed_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# 1. An offline run leaves its pages pending


def test_an_offline_run_leaves_its_pages_pending_and_the_next_run_fetches_them(cli, tmp_path, web, monkeypatch):
    names = ["a.test", "b.test", "c.test", "d.test"]
    for name in names:
        web.add(f"/{name}", article(f"来自 {name}"))
    (tmp_path / "mylist.md").write_text("".join(f"- http://{n}:{web.port}/{n}\n" for n in names), encoding="utf-8")
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")  # nothing answers: no network
    result = cli("fetch", "mylist.md", *QUICK)
    assert result.exit_code == 0, result.output
    last = result.stderr.strip().splitlines()[-1]  # (after a line per page: not a terminal)
    assert "no host name resolved" in last and "4 pages left pending" in last, result.stderr
    assert "pages in" not in result.stderr  # one line, not a summary table of failures
    statuses = {row["url"]: (row["status"], row["error"]) for row in db_of(tmp_path)["pages"].rows}
    assert set(statuses.values()) == {("pending", None)}
    assert sum(web.recorder.hits.values()) == 0

    with DNSServer("127.0.0.1") as dns:  # the network is back: no --retry-failed needed
        dns.zone.addresses.update({name: ["127.0.0.1"] for name in names})
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", "mylist.md", *QUICK)
    assert result.exit_code == 0, result.output
    assert {row["status"] for row in db_of(tmp_path)["pages"].rows} == {"archived"}, result.output


def test_an_offline_run_of_one_url_or_with_a_resolver_saying_no_such_name_leaves_it_pending(cli, tmp_path, web, monkeypatch):
    """Fewer names than the offline rule counts, or a resolver that says "no such name" to
    everything while offline (some do): nothing was reached, so nothing was really tried."""
    monkeypatch.setenv("MIRROR_NAMESERVERS", f"127.0.0.1:{closed_udp_port()}")
    result = cli("fetch", f"http://one.test:{web.port}/post", *QUICK)
    assert result.exit_code == 0 and "1 page left pending" in result.stderr, result.output
    assert [row["status"] for row in db_of(tmp_path)["pages"].rows] == ["pending"]
    with DNSServer("127.0.0.1") as dns:  # answers NXDOMAIN for every name
        monkeypatch.setenv("MIRROR_NAMESERVERS", dns.nameserver)
        result = cli("fetch", f"http://two.test:{web.port}/a", f"http://three.test:{web.port}/b", *QUICK)
    assert result.exit_code == 0 and "2 pages left pending" in result.stderr, result.output
    assert {row["status"] for row in db_of(tmp_path)["pages"].rows} == {"pending"}
    assert db_of(tmp_path)["dead_names"].count == 0  # not believed either


# 2. One article behind two links


def test_two_links_to_one_article_are_stored_and_indexed_once(cli, tmp_path, web):
    target = web.add("/posts/flash-attention", article("分块注意力", "独一无二的词：瓦片化。"))
    web.add("/p/123", b"", status=301, Location="/posts/flash-attention")  # a short link
    canonical = '<link rel="canonical" href="{}">'.format(target)
    copy = article("分块注意力", "独一无二的词：瓦片化。").replace(b"<head>", f"<head>{canonical}".encode())
    web.add("/amp/flash-attention", copy)  # the same article at another address, declaring the first
    other = article("另一篇文章", "瓦片化也出现在这里。").replace(b"<head>", b'<head><link rel="canonical" href="/">')
    home_canonical = web.add("/another", other)  # declares the site's home, with its own title: not a duplicate
    (tmp_path / "list.md").write_text(
        f"- {target}\n- {web.url('/p/123')}\n- {web.url('/amp/flash-attention')}\n- {home_canonical}\n", encoding="utf-8"
    )
    result = cli("fetch", "list.md", *QUICK)
    assert result.exit_code == 0, result.output
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[target]["status"] == "archived"
    for url in (web.url("/p/123"), web.url("/amp/flash-attention")):
        assert rows[url]["status"] == "duplicate" and rows[url]["same_as"] == target
    assert rows[home_canonical]["status"] == "archived"
    result = cli("search", "瓦片化", "--json")
    assert sorted(hit["url"] for hit in __import__("json").loads(result.stdout)) == sorted([target, home_canonical])
    result = cli("show", web.url("/p/123"))
    assert f"same article as: {target}" in " ".join(result.stdout.split())
    # a re-extraction keeps them duplicates
    assert cli("reindex").exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[web.url("/p/123")]["status"] == "duplicate"
    assert db_of(tmp_path).execute("select count(*) from pages_fts").fetchone()[0] == 2


def _long(words: str) -> str:
    """An article's worth of text of its own: `words`, then 600 characters drawn by a seed of them."""
    import random

    pool = "模型训练推理显存带宽算子融合调度流水线并行张量切分通信拓扑梯度累积混合精度量化蒸馏缓存命中延迟吞吐"
    draw = random.Random(words)
    return words + "。" + "".join(draw.choice(pool) + ("，" if i % 12 == 11 else "") for i in range(600)) + "。"


def test_a_page_elsewhere_declaring_an_articles_canonical_url_cannot_hide_it(cli, tmp_path, web):
    """A canonical URL and a title are claims: a page of another site making them, or a page
    whose text differs (the second page of a series), is not the article's duplicate."""
    canonical = web.url("/posts/real-article")
    declares = f'<link rel="canonical" href="{canonical}">'.encode()
    spam = web.add("/x", article("Real Article", _long("广告")).replace(b"<head>", b"<head>" + declares))
    spam = spam.replace("127.0.0.1", "localhost")  # another site
    legit = web.add("/article-7", article("Real Article", _long("斑马")).replace(b"<head>", b"<head>" + declares))
    series = f'<link rel="canonical" href="{web.url("/series")}">'.encode()
    one = web.add("/series-1", article("Series", _long("第一页")).replace(b"<head>", b"<head>" + series))
    two = web.add("/series-2", article("Series", _long("第二页")).replace(b"<head>", b"<head>" + series))
    (tmp_path / "first.md").write_text(f"{spam}\n{one}\n", encoding="utf-8")
    (tmp_path / "second.md").write_text(f"{legit}\n{two}\n", encoding="utf-8")
    assert cli("fetch", "first.md", *QUICK).exit_code == 0  # recorded first
    assert cli("fetch", "second.md", *QUICK).exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert {url: rows[url]["status"] for url in (spam, legit, one, two)} == dict.fromkeys((spam, legit, one, two), "archived")
    import json

    assert [hit["url"] for hit in json.loads(cli("search", "斑马", "--json").stdout)] == [legit]
    assert [hit["url"] for hit in json.loads(cli("search", "第二页", "--json").stdout)] == [two]


def test_a_relative_canonical_url_is_read_as_the_browser_reads_it(cli, tmp_path, web):
    body = _long("相对")
    original = web.add("/o", article("同一篇", body))
    copy = web.add("/c", article("同一篇", body).replace(b"<head>", b'<head><link rel="canonical" href="/o">'))
    (tmp_path / "list.md").write_text(f"{copy}\n{original}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[copy]["canonical"] == original
    assert (rows[copy]["status"], rows[copy]["same_as"], rows[original]["status"]) == ("duplicate", original, "archived")


def test_when_the_original_stops_being_an_article_its_duplicate_takes_its_place(cli, tmp_path, web):
    import json

    original = web.add("/orig", article("袋鼠", _long("袋鼠")))
    web.add("/short", b"", status=301, Location="/orig")
    (tmp_path / "a.md").write_text(f"{original}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"{web.url('/short')}\n", encoding="utf-8")
    assert cli("fetch", "a.md", "b.md", *QUICK).exit_code == 0
    assert db_of(tmp_path)["pages"].get(web.url("/short"))["status"] == "duplicate"
    web.add("/orig", b"<html><head><title>x</title></head><body></body></html>")  # the page is emptied
    result = cli("fetch", "a.md", "--refresh", *QUICK)
    assert result.exit_code == 0, result.output
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    # an emptied page is a bad answer (issue 27): it never replaces the saved article
    assert (rows[original]["status"], rows[original]["health"]) == ("archived", "soft_404")
    assert rows[web.url("/short")]["status"] == "duplicate"
    assert [hit["url"] for hit in json.loads(cli("search", "袋鼠", "--json").stdout)] == [original]
    from mirror._types import Extraction, PageStatus

    with Archive(tmp_path / "archive") as archive:  # a re-extraction that finds no text (a reindex) ends the article
        archive.save_extractions([(original, Extraction(status=PageStatus.NO_TEXT, kind="html"))])
    rows = {row["url"]: row for row in db_of(tmp_path)["pages"].rows}
    assert rows[original]["status"] == "no_text"
    assert (rows[web.url("/short")]["status"], rows[web.url("/short")]["same_as"]) == ("archived", None)
    assert [hit["url"] for hit in json.loads(cli("search", "袋鼠", "--json").stdout)] == [web.url("/short")]


def test_a_page_the_browser_saved_is_checked_for_duplicates_too(tmp_path):
    from mirror._types import Extraction, PageStatus, Render

    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/app", "https://example.com/go"]))
        text = _long("袋熊")
        for url in ("https://example.com/app", "https://example.com/go"):
            rendered = Extraction(status=PageStatus.ARCHIVED, kind="html", title="袋熊", text=text, markdown=text)
            status = archive.record_render(url, Render(final_url="https://example.com/app", status=200, article=rendered))
        assert status == PageStatus.DUPLICATE
        rows = {row["url"]: row for row in archive.db["pages"].rows}
        assert rows["https://example.com/go"]["same_as"] == "https://example.com/app"
        assert archive.db.execute("select count(*) from pages_fts").fetchone()[0] == 1


# 3. `mirror fetch FILE` fetches what FILE links


def test_fetch_of_one_list_fetches_that_lists_pages_only(cli, tmp_path, web):
    first, second, dropped = web.add("/one", article("一")), web.add("/two", article("二")), web.add("/three", article("三"))
    (tmp_path / "earlier.md").write_text(f"{first}\n", encoding="utf-8")
    (tmp_path / "later.md").write_text(f"{second}\n{dropped}\n", encoding="utf-8")
    assert cli("links", "earlier.md", "later.md").exit_code == 0  # recorded, pending
    (tmp_path / "later.md").write_text(f"{second}\n", encoding="utf-8")  # a link removed from its list
    result = cli("fetch", "later.md", *QUICK)
    assert result.exit_code == 0, result.output
    assert web.recorder.hits["/two"] == 1 and web.recorder.hits["/one"] == 0 and web.recorder.hits["/three"] == 0
    statuses = {row["url"]: row["status"] for row in db_of(tmp_path)["pages"].rows}
    assert statuses == {first: "pending", second: "archived", dropped: "pending"}

    # everything pending: what the other list links, not the page no list links any more
    result = cli("fetch", "later.md", "--all-pending", *QUICK)
    assert result.exit_code == 0, result.output
    assert web.recorder.hits["/one"] == 1 and web.recorder.hits["/three"] == 0
    assert db_of(tmp_path)["pages"].get(dropped)["status"] == "pending"


# 4. Link titles


def test_task_items_mailto_prose_and_relative_links():
    text = "\n".join(
        [
            "- [ ] https://example.com/todo",
            "- [x] https://example.com/done",
            "Questions? Write to mailto:someone@example.com",
            "More in ./notes.md and `./build.sh`.",
            '[paper]: https://arxiv.org/abs/2205.14135 "FlashAttention"',
            "[notes]: ./notes/attention.md",
        ]
    )
    links = {(link.line, link.url): link for link in parse_text(text, "list.md")}
    assert links[(1, "https://example.com/todo")].title is None
    assert links[(2, "https://example.com/done")].title is None
    assert links[(3, "mailto:someone@example.com")].title is None
    notes = links[(4, "./notes.md")]
    assert notes.skip_reason and "relative" in notes.skip_reason
    assert not any(url == "./build.sh" for _, url in links)  # code, not a link
    assert links[(5, "https://arxiv.org/abs/2205.14135")].title == "FlashAttention"
    assert "relative" in links[(6, "./notes/attention.md")].skip_reason


def test_headings_labels_and_prose_in_brackets_stay_what_they_are():
    text = "\n".join(
        [
            "## Build notes (./configure flags)",
            "- https://example.com/one",
            "**Read ./later:**",
            "- https://example.com/two",
            "[TODO]: later",
            "[y]: //cdn.example.com/x.js",
        ]
    )
    links = {link.url: link for link in parse_text(text, "list.md")}
    assert links["https://example.com/one"].section == "Build notes (./configure flags)"
    assert links["https://example.com/two"].section == "Read ./later"
    assert set(links) == {"https://example.com/one", "https://example.com/two", "https://cdn.example.com/x.js"}


def test_relative_links_are_reported_by_fetch(cli, tmp_path, web):
    url = web.add("/page", article("页"))
    (tmp_path / "list.md").write_text(f"{url}\nsee ./notes.md\n", encoding="utf-8")
    result = cli("fetch", "list.md", *QUICK)
    assert "1 link is not a web page and is skipped" in result.stderr
    assert db_of(tmp_path)["pages"].get("./notes.md")["status"] == "skipped"


# 5. Ctrl-C and what an interrupted run left


def test_ctrl_c_prints_the_clean_line_only(tmp_path, web):
    urls = [web.url(f"/slow/{n}?s=3") for n in range(6)] + [web.add(f"/fast{n}", article(f"快 {n}")) for n in range(4)]
    (tmp_path / "list.md").write_text("\n".join(urls) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "fetch", "list.md", "--delay", "0", "--workers", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"},
    )
    deadline = time.monotonic() + 60
    db = tmp_path / "archive" / "mirror.db"
    while time.monotonic() < deadline:  # the workers are up once a page is archived
        time.sleep(0.2)
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute("select count(*) from pages where status = 'archived'").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole process group
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted:" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_stylesheets_of_pages_an_interrupted_run_saved_are_fetched_by_the_next(tmp_path, web):
    web.add("/style.css", b"body { color: #333 }", content_type="text/css")
    page = article("样式").replace(b"<head>", b'<head><link rel="stylesheet" href="/style.css">')
    url = web.add("/styled", page)
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url]))
        run(archive, FetchOptions(delay=0, retries=0, workers=1))
    db = db_of(tmp_path)
    assert db["resources"].get((url, web.url("/style.css")))["status"] == "archived"
    # what a stop between the page and its resources leaves: the page recorded, its resources not
    db.execute("delete from resources")
    db.execute("update pages set resources_at = null")
    db.conn.commit()
    with Archive(tmp_path / "archive") as archive, archive.lock():
        summary = run(archive, FetchOptions(delay=0, retries=0, workers=1))
    assert summary.images_resumed == 1
    assert web.recorder.hits["/style.css"] == 2
    assert db["resources"].get((url, web.url("/style.css")))["status"] == "archived"
    assert db["pages"].get(url)["resources_at"] is not None


# 6. A hanging page


def test_a_page_that_timed_out_is_retried_once_unless_asked(tmp_path, web):
    url = web.url("/never")
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([url]))
        run(archive, FetchOptions(delay=0, timeout=0.5, retries=3, backoff=0, workers=1))
        assert web.recorder.hits["/never"] == 2
        run(archive, FetchOptions(delay=0, timeout=0.5, retries=3, backoff=0, workers=1, retry_failed=True, timeout_retries=3))
    assert web.recorder.hits["/never"] == 2 + 4
    attempts = db_of(tmp_path).execute("select count(*) from attempts where url = ?", [url]).fetchone()[0]
    assert attempts == 6


def test_the_bar_names_the_slowest_requests_in_flight_and_its_eta_moves():
    now = time.monotonic()
    in_flight = {"http://fast.example/a": now - 1, "http://hang.example/forever": now - 42, "http://slow.example/b": now - 7}
    lines = [text.plain for text in slowest_in_flight(in_flight, now)]
    assert [line.split()[-1] for line in lines] == ["http://hang.example/forever", "http://slow.example/b"]
    assert "42 s" in lines[0]

    from rich.progress import Progress

    progress = Progress()
    task_id = progress.add_task("fetch", total=10)
    progress.update(task_id, completed=5)
    task = progress.tasks[0]
    task.start_time = time.monotonic() - 10  # 5 pages in 10 s
    first = _Remaining().render(task).plain
    task.start_time -= 20  # 20 s more and not one page more
    later = _Remaining().render(task).plain
    assert first == "0:00:10" and later == "0:00:30"


def test_a_terminal_shows_the_request_that_hangs(web):
    console_file = io.StringIO()
    from rich.console import Console

    reporter = FetchReporter(Console(file=console_file, force_terminal=True, width=120))
    summary = Summary(total=3)
    summary.in_flight["http://hang.example/forever"] = time.monotonic() - 12
    reporter.start(summary)
    reporter._progress.refresh()
    reporter.stop()
    assert "waiting" in console_file.getvalue() and "http://hang.example/forever" in console_file.getvalue()


# 8. The command line


def test_version_short_help_and_examples(cli):
    from mirror import __version__

    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"mirror {__version__}"
    result = cli("fetch", "-h", env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "seeds/" in result.stdout and "mirror fetch mylist.md" in result.stdout
    assert "auto" in result.stdout and "always" in result.stdout and "never" in result.stdout
    result = cli("fetch", "--browser", "sometimes")
    assert result.exit_code == 2 and "sometimes" in result.output


@pytest.mark.parametrize(("written", "size"), [("50M", 50_000_000), ("10MB", 10_000_000), ("2KiB", 2048), ("1234", 1234)])
def test_max_bytes_takes_sizes_as_people_write_them(cli, tmp_path, web, written, size):
    url = web.add("/sized", article("大小", "字" * 3000))
    result = cli("fetch", url, "--max-bytes", written, *QUICK, "--json")
    assert result.exit_code == 0, result.output
    status = db_of(tmp_path)["pages"].get(url)
    assert (status["status"] == "failed") == (size < 9000), (written, status["status"])


def test_max_bytes_refuses_a_size_it_cannot_read(cli):
    result = cli("fetch", "--max-bytes", "ten")
    assert result.exit_code == 2 and "'ten' is not a size" in result.output


def test_search_shows_the_id_show_takes_and_names_a_filter_that_matches_nothing(cli, tmp_path, web):
    url = web.add("/post", article("显存优化", "重计算节省显存。"))
    assert cli("fetch", url, *QUICK).exit_code == 0
    page_id = db_of(tmp_path)["pages"].get(url)["id"]
    result = cli("search", "显存")
    assert f"mirror show {page_id}" in result.stdout
    assert "显存优化" in cli("show", str(page_id)).stdout
    assert "显存优化" in cli("show", url.removeprefix("http://")).stdout  # as `links` reads a URL without its scheme
    result = cli("search", "显存", "--site", "nosuch.example")
    assert result.exit_code == 0 and "--site 'nosuch.example'" in result.stderr and "filter" in result.stderr


# 9. No-op runs and the links table


def test_a_run_with_nothing_to_do_says_so_in_one_line(cli, tmp_path, web):
    url = web.add("/done", article("完成"))
    (tmp_path / "list.md").write_text(f"{url}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK).exit_code == 0
    result = cli("fetch", "list.md", *QUICK)
    assert result.exit_code == 0
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("nothing to fetch"), result.output
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    result = cli("fetch", "empty.md", *QUICK)
    assert result.exit_code == 0 and len(result.output.strip().splitlines()) == 1, result.output


def test_links_never_wraps_a_url(cli, tmp_path):
    url = "https://zhuanlan.zhihu.com/p/" + "1234567890" * 5 + "?utm_source=x&share=" + "abcdef" * 6
    (tmp_path / "list.md").write_text(f"- [一篇很长标题的文章，讲的是显存优化与重计算]({url})\n", encoding="utf-8")
    for width in ("60", "100", "300"):  # on a terminal: a table
        result = cli("links", "list.md", env={"COLUMNS": width, "FORCE_COLOR": "1"})
        rows = [line for line in result.stdout.splitlines() if "zhuanlan" in line]
        assert len(rows) == 1 and "│" in rows[0], result.stdout  # on one line, whole or with its middle left out
        if int(width) >= 300:
            assert url.split("?")[0] in rows[0]
        else:
            assert "…" in rows[0]
    result = cli("links", "list.md", env={"COLUMNS": "60"})  # piped: whole, tab-separated
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows[0] == ["seed:line", "section", "title", "url", "note"]
    assert rows[1][0] == "list.md:1" and rows[1][3] == url.split("?")[0] + "?share=" + "abcdef" * 6, rows


# 10. Errors


def test_a_bad_cookies_file_is_named_as_the_user_wrote_it(cli, tmp_path):
    (tmp_path / "my-cookies.txt").write_text("# Netscape HTTP Cookie File\nnot\ta cookie line\n", encoding="utf-8")
    result = cli("fetch", "https://example.com/", "--cookies", "my-cookies.txt")
    assert result.exit_code == 2
    assert "my-cookies.txt" in result.stderr and "/tmp/tmp" not in result.stderr.replace(str(tmp_path), "")


def test_write_commands_on_a_read_only_archive_say_read_only(tmp_path):
    from .conftest import run_mirror

    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/a"]))
    with read_only(tmp_path / "archive"):
        for command in (["fetch", "https://example.com/b"], ["links", "https://example.com/c"], ["reindex"]):
            result = run_mirror(*command, cwd=tmp_path)
            assert result.returncode == 1 and "read-only" in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_slow_hosts_are_slow_servers_not_our_politeness(tmp_path, web, web2):
    web.add("/hop", b"", status=302, Location="/landing")  # its second request waits our 1 s at the gate
    web.add("/landing", article("落地"))
    quick = [web.add(f"/q{n}", article(f"快 {n}")) for n in range(3)]
    slow = [web2.url(f"/slow/{n}?s=1.2") for n in range(2)]
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls([web.url("/hop"), *quick, *slow]))
        summary = run(archive, FetchOptions(delay=1.0, per_host=1, retries=0, workers=1, images=False))
    assert [host for host, _, _ in summary.slowest_hosts()] == [f"127.0.0.2:{web2.port}"]
    assert max(summary.host_seconds[f"127.0.0.1:{web.port}"]) < 0.5  # the redirect's politeness wait left out


def test_a_host_answering_at_once_is_never_slow():
    summary = Summary()
    summary.host_seconds["fast.example"] = [0.01, 0.02]
    summary.host_seconds["slow.example"] = [1.5, 2.5]
    assert [host for host, _, _ in summary.slowest_hosts()] == ["slow.example"]


def test_readme_quick_start_names_the_commands_that_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Quick start")
    assert start < text.index("## Commands")
    assert text.index("```sh") < start  # the two set-up commands stay first


def test_text_alike_is_one_article_and_a_series_is_not():
    from mirror._util.similar import same_text

    assert same_text(_long("同一篇"), _long("同一篇") + "编辑后补了一句。")  # the AMP copy, edited a little
    assert not same_text(_long("第一页"), _long("第二页"))
    english = " ".join(["the", "model", "is", "trained", "with", "data", "and", "a", "loss"] * 300)
    assert not same_text(english, " ".join(reversed(english.split())))  # the same words, another text


def test_a_render_that_makes_a_page_a_duplicate_hands_its_duplicates_to_the_original(tmp_path):
    from mirror._types import Extraction, PageStatus, Render

    text = _long("渲染")
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(["https://example.com/b", "https://example.com/a", "https://example.com/c"]))
        db = archive.db
        db.execute("update pages set status = 'archived', title = 'Same', text = ? where url = 'https://example.com/b'", [text])
        db.execute("update pages set status = 'archived', title = 'thin', text = 'x' where url = 'https://example.com/a'")
        db.execute("update pages set status = 'duplicate', same_as = 'https://example.com/a' where url = 'https://example.com/c'")
        rendered = Extraction(status=PageStatus.ARCHIVED, kind="html", title="Same", text=text, markdown=text, canonical="https://example.com/b")
        status = archive.record_render("https://example.com/a", Render(final_url="https://example.com/a", status=200, article=rendered))
        assert status == PageStatus.DUPLICATE
        rows = {row["url"]: (row["status"], row["same_as"]) for row in db["pages"].rows}
        assert rows["https://example.com/a"] == ("duplicate", "https://example.com/b")
        assert rows["https://example.com/c"] == ("duplicate", "https://example.com/b")  # no chain through a duplicate
