"""The command line as a user meets it: `mirror links`, `fetch`'s summary and progress, options
read as people write them, and every bad command line a clear error, never a traceback."""

from __future__ import annotations

import io
import json
import re
import shutil
import socket
import sqlite3
import time
from collections import Counter

import pytest
from rich.console import Console

from mirror._types import Outcome
from mirror.cli.progress import FetchReporter, _Remaining, slowest_in_flight
from mirror.fetch import Summary

from .helpers import QUICK_ARGS, SEEDS, count, db_of, links_json, run_mirror
from .webserver import article


def test_links_json_on_real_seeds(tmp_path):
    shutil.copytree(SEEDS, tmp_path / "seeds")
    result = run_mirror("links", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    links = links_json(result)
    assert len(links) > 300
    by_place = {(link["seed"].rsplit("/", 1)[-1][:3], link["line"]): link for link in links}
    triton = by_place[("002", 58)]
    assert triton["url_as_written"] == "https://github.com/openai/tritonPython"
    assert triton["candidates"][0] == "https://github.com/openai/triton"
    assert by_place[("004", 62)]["status"] == "skipped"
    assert set(triton) >= {"url", "url_as_written", "seed", "line", "title", "section", "status"}
    db = sqlite3.connect(tmp_path / "archive" / "mirror.db")
    assert db.execute("select count(*) from links").fetchone()[0] == len(links)
    assert "-> " in result.stderr and "pages" in result.stderr


def test_links_lists_titles_and_urls_without_tracking_parameters(cli, tmp_path):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.txt").write_text("显存优化 - 知乎\nhttps://zhuanlan.zhihu.com/p/1?utm_source=x\n", encoding="utf-8")
    result = cli("links")
    assert result.exit_code == 0
    assert "显存优化" in result.stdout and "https://zhuanlan.zhihu.com/p" in result.stdout
    assert "utm_source" not in result.stdout


def test_archive_option_and_environment(cli, tmp_path):
    seed = tmp_path / "s.txt"
    seed.write_text("https://a.example/\n", encoding="utf-8")
    assert cli("links", str(seed), "--archive", "by-option").exit_code == 0
    assert (tmp_path / "by-option" / "mirror.db").exists()
    assert cli("links", str(seed), env={"MIRROR_ARCHIVE": str(tmp_path / "by-env")}).exit_code == 0
    assert (tmp_path / "by-env" / "mirror.db").exists()
    assert not (tmp_path / "archive").exists()


def test_missing_path_is_a_clear_error(tmp_path):
    result = run_mirror("links", "no-such-seeds", cwd=tmp_path)
    assert result.returncode == 2
    assert "no-such-seeds: no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_default_seeds_folder_missing(tmp_path):
    result = run_mirror("links", cwd=tmp_path)
    assert result.returncode == 2
    assert "seeds: no such file or folder" in result.stderr


def test_bad_files_warn_and_the_rest_is_processed(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "empty.txt").write_bytes(b"")
    (seeds / "binary.bin").write_bytes(bytes(range(256)))
    (seeds / "gbk.txt").write_bytes("中文标题\nhttps://example.cn/a\n".encode("gbk"))
    result = run_mirror("links", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(link["url"], link["title"]) for link in json.loads(result.stdout)] == [("https://example.cn/a", "中文标题")]
    assert "binary.bin: binary file" in result.stderr
    assert "empty.txt: empty" in result.stderr
    assert "GB18030" in result.stderr


def test_unwritable_archive_is_a_clear_error(tmp_path):
    (tmp_path / "s.txt").write_text("https://a.example/\n")
    (tmp_path / "blocker").write_text("a file where the archive folder should be")
    result = run_mirror("links", "s.txt", "--archive", "blocker/archive", cwd=tmp_path)
    assert result.returncode == 1
    assert "error:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.hostile
def test_links_prints_a_summary_past_a_few_hundred_rows_and_json_prints_all(cli, tmp_path):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "many.txt").write_text("\n".join(f"https://example.com/p/{i}" for i in range(1000)) + "\n")
    (tmp_path / "seeds" / "few.md").write_text("- [one](https://example.org/one)\n")
    result = cli("links", env={"FORCE_COLOR": "1"})  # on a terminal
    assert result.exit_code == 0
    assert "1001 links: too many to list, use --json" in result.output
    assert re.search(r"seeds/many\.txt\s*│\s*1000\s*│\s*1000\s*│\s*0", result.output)
    assert "https://example.com/p/999" not in result.output
    as_json = cli("links", "--json")
    assert len(json.loads(as_json.stdout)) == 1001
    piped = cli("links")  # not a terminal: every link, tab-separated
    assert len(piped.stdout.splitlines()) == 1 + 1001 and "\thttps://example.com/p/999\t" in piped.stdout


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


def test_fetch_cli_summary_json_and_failures_are_data(tmp_path, web):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.md").write_text(
        f"# 列表\n- [文章]({web.url('/article/1')})\n- [没有]({web.url('/missing')})\n![](/images/x.png)\n",
        encoding="utf-8",
    )
    result = run_mirror("fetch", "--delay", "0", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["total"] == 2 and summary["statuses"] == {"archived": 1, "failed": 1}
    assert summary["errors"] == {"http_404": 1}
    assert "[2/2]" in result.stderr  # plain progress lines when not a terminal
    db = tmp_path / "archive" / "mirror.db"
    assert count(db, "select count(*) from pages where status = 'skipped'") == 1
    table = run_mirror("fetch", "--delay", "0", "--retry-failed", cwd=tmp_path)
    assert table.returncode == 0 and "http_404" in table.stderr


def test_fetch_urls_given_on_the_command_line(tmp_path, web):
    result = run_mirror("fetch", web.url("/article/cli"), "--delay", "0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert count(tmp_path / "archive" / "mirror.db", "select count(*) from pages where status = 'archived'") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cookies", "missing.txt"], "no such cookies file"),
        (["--header", "no colon"], "expected 'Name: value'"),
        (["--concurrency", "0"], "Invalid value"),
        (["missing-folder"], "no such file or folder"),
    ],
)
def test_bad_fetch_arguments_exit_2_with_a_message(tmp_path, args, message):
    (tmp_path / "seeds").mkdir()
    result = run_mirror("fetch", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


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
    result = cli("fetch", url, "--max-bytes", written, *QUICK_ARGS, "--json")
    assert result.exit_code == 0, result.output
    status = db_of(tmp_path)["pages"].get(url)
    assert (status["status"] == "failed") == (size < 9000), (written, status["status"])


def test_max_bytes_refuses_a_size_it_cannot_read(cli):
    result = cli("fetch", "--max-bytes", "ten")
    assert result.exit_code == 2 and "'ten' is not a size" in result.output


def test_relative_links_are_reported_by_fetch(cli, tmp_path, web):
    url = web.add("/page", article("页"))
    (tmp_path / "list.md").write_text(f"{url}\nsee ./notes.md\n", encoding="utf-8")
    result = cli("fetch", "list.md", *QUICK_ARGS)
    assert "1 link is not a web page and is skipped" in result.stderr
    assert db_of(tmp_path)["pages"].get("./notes.md")["status"] == "skipped"


def test_a_run_with_nothing_to_do_says_so_in_one_line(cli, tmp_path, web):
    url = web.add("/done", article("完成"))
    (tmp_path / "list.md").write_text(f"{url}\n", encoding="utf-8")
    assert cli("fetch", "list.md", *QUICK_ARGS).exit_code == 0
    result = cli("fetch", "list.md", *QUICK_ARGS)
    assert result.exit_code == 0
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("nothing to fetch"), result.output
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    result = cli("fetch", "empty.md", *QUICK_ARGS)
    assert result.exit_code == 0 and len(result.output.strip().splitlines()) == 1, result.output


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


def test_progress_counts_a_page_the_browser_got_past_as_archived():
    from mirror.cli.progress import FetchReporter

    out = io.StringIO()
    reporter = FetchReporter(Console(file=out, force_terminal=True, width=200))
    summary = Summary(total=1, done=1, statuses=Counter({Outcome.FAILED: 1}))
    reporter.start(summary)
    summary.statuses = Counter({Outcome.ARCHIVED: 1})  # what fetch.run's recount did
    summary.rendered["archived from browser"] += 1
    reporter.render("http://example.com/challenge", "archived from browser", summary)
    reporter.stop()
    assert "archived 1" in out.getvalue().rsplit("fetch", 1)[-1]


def test_a_bad_cookies_file_is_named_as_the_user_wrote_it(cli, tmp_path):
    (tmp_path / "my-cookies.txt").write_text("# Netscape HTTP Cookie File\nnot\ta cookie line\n", encoding="utf-8")
    result = cli("fetch", "https://example.com/", "--cookies", "my-cookies.txt")
    assert result.exit_code == 2
    assert "my-cookies.txt" in result.stderr and "/tmp/tmp" not in result.stderr.replace(str(tmp_path), "")


@pytest.mark.hostile
def test_a_cookies_file_error_prints_no_emoji(tmp_path):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("root:x:0:0:root:/root:/bin/bash\n")
    result = run_mirror("fetch", "--cookies", str(cookies), "http://127.0.0.1:9/", cwd=tmp_path)
    assert result.returncode == 2 and "❌" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.hostile
def test_bad_command_lines_are_clear_errors_never_tracebacks(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "mirror.db").write_bytes(b"garbage, not SQLite")
    cases = [
        (["serve", "--archive", str(bad)], 1, "not a database"),
        (["fetch", "http://127.0.0.1:9/\udcff"], 2, "not valid UTF-8"),
        (["show", "\udcff", "--archive", str(bad)], 2, "not valid UTF-8"),
        (["fetch", "--header", "X: a\r\nInjected: 1", "http://127.0.0.1:9/"], 2, "line breaks"),
        (["fetch", "--user-agent", "UA\nX-Evil: 1", "http://127.0.0.1:9/"], 2, "line breaks"),
    ]
    for args, code, message in cases:
        result = run_mirror(*args, cwd=tmp_path, env={"PYTHONIOENCODING": "utf-8:surrogateescape"})
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)


@pytest.mark.hostile
def test_serve_on_a_port_in_use_says_so(tmp_path, hostile_archive):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_mirror("serve", "--archive", str(hostile_archive), "--port", str(port), cwd=tmp_path, timeout=60)
    assert result.returncode == 1 and "cannot listen" in result.stderr and "Traceback" not in result.stderr
