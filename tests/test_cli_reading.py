"""The commands a reader types, on a terminal and piped (issue 42, item 12): `mirror links` in
120 columns, `mirror fetch --help`, `mirror show` (plain when piped, paged on a terminal, a hint
for a page without an article) and `mirror serve --open`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

from .browsing import fetch
from .helpers import free_port, run_mirror

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
URL = "https://zhuanlan.zhihu.com/p/" + "1234567890" * 4 + "?share=" + "abcdef" * 4


def test_links_on_a_120_column_terminal_keeps_seed_section_and_title_readable(cli, tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "004_大模型推理与部署笔记.md").write_text(
        "# 推理框架与服务化部署\n\n"
        f"- [vLLM: Easy, Fast, and Cheap LLM Serving with PagedAttention]({URL})\n"
        "- [FlashAttention-2: Faster Attention with Better Parallelism](https://arxiv.org/abs/2307.08691)\n",
        encoding="utf-8",
    )
    result = cli("links", env={"COLUMNS": "120", "FORCE_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = [ANSI.sub("", line) for line in result.stdout.splitlines()]
    assert all(len(line) <= 120 for line in lines)
    rows = [line for line in lines if "│" in line and ("zhuanlan" in line or "arxiv" in line)]
    assert len(rows) == 2, "\n".join(lines)  # each URL on one line
    cells = [cell.strip() for cell in rows[0].strip("│").split("│")]
    seed, section, title = cells[:3]
    assert seed.endswith(":3") and len(seed) >= 12 and ("004_" in seed or "…" in seed), cells
    assert section == "推理框架与服务化部署", cells  # whole, on one line
    assert title.startswith("vLLM: Easy, Fast, and Cheap"), cells
    section_lines = [line for line in lines if "服务化" in line or "推理框架" in line]
    assert len(section_lines) == 2  # not wrapped over lines of its own


def test_fetch_help_is_grouped_and_readable(cli):
    result = cli("fetch", "--help", env={"COLUMNS": "100"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) <= 80, result.stdout
    for panel in ("What to fetch", "Politeness", "Identity and access", "Browser", "The run"):
        assert any(panel in line for line in lines), panel
    delay = next(line for line in lines if "--delay" in line)
    assert "Seconds between requests to one host" in delay  # the whole description beside its option, on one line


def test_show_piped_is_plain_markdown_with_whole_urls(cli, tmp_path, web):
    long_link = "https://example.com/" + "a-very-long-path/" * 8 + "end"
    body = f"<p>显存优化的第一段，讲重计算和混合精度，还有一个很长的链接 <a href='{long_link}'>参考</a>。</p>" * 3
    url = web.add("/long", f"<html><head><title>显存优化</title></head><body><article>{body}</article></body></html>".encode())
    fetch(tmp_path, url)
    result = run_mirror("show", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("显存优化\nurl: " + url + "\n")
    assert f"({long_link})" in result.stdout  # the Markdown as it is, its URL whole
    assert "\x1b" not in result.stdout
    assert not any(line.endswith(" ") for line in result.stdout.splitlines())  # no padding to 80 columns


def test_show_hints_what_to_do_about_a_page_without_an_article(cli, tmp_path, web):
    missing = web.url("/nothing-here")
    (tmp_path / "list.md").write_text(f"- {missing}\n- https://b.example/later\n", encoding="utf-8")
    assert run_mirror("links", "list.md", cwd=tmp_path).returncode == 0
    pending = run_mirror("show", "https://b.example/later", cwd=tmp_path)
    assert "not fetched yet: `mirror fetch` fetches it" in pending.stdout
    fetch(tmp_path, missing)
    failed = run_mirror("show", missing, cwd=tmp_path)
    assert "status: failed" in failed.stdout and "`mirror fetch --retry-failed` tries again" in failed.stdout


def test_show_on_a_terminal_goes_through_the_pager(tmp_path, web):
    import pty

    url = web.add(
        "/paged",
        "<html><head><title>分页显示</title></head><body><article>{}</article></body></html>".format("<p>一段很长的文字。</p>" * 40).encode(),
    )
    fetch(tmp_path, url)
    paged = tmp_path / "paged.txt"
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "mirror", "show", url],
            cwd=tmp_path,
            stdin=follower,
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**os.environ, "PAGER": f"tee {paged}", "COLUMNS": "100", "TERM": "xterm"},
        )
        os.close(follower)
        follower = None
        output = b""
        while process.poll() is None or _readable(leader):
            try:
                output += os.read(leader, 65536)
            except OSError:
                break
        process.wait(timeout=60)
    finally:
        os.close(leader)
        if follower is not None:
            os.close(follower)
    assert process.returncode == 0, process.stderr.read()
    text = ANSI.sub("", paged.read_text(encoding="utf-8"))
    assert "分页显示" in text and text.count("一段很长的文字") >= 40  # what the pager was given: the rendered page


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0.2)[0])


def _serve_open(tmp_path, browser: str) -> tuple[subprocess.Popen, str]:
    assert run_mirror("links", "list.md", cwd=tmp_path).returncode == 0
    port = free_port()
    empty = tmp_path / "no-browsers-here"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MIRROR_ARCHIVE")}
    env |= {"BROWSER": browser, "PATH": str(empty)}  # only $BROWSER: no browser of this machine's is found
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--open", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, f"http://127.0.0.1:{port}/"


def test_serve_open_opens_the_reading_home(tmp_path):
    (tmp_path / "list.md").write_text("- https://a.example/\n", encoding="utf-8")
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" > {opened}\n', encoding="utf-8")
    script.chmod(0o755)
    process, home = _serve_open(tmp_path, f"{script} %s")
    try:
        deadline = time.monotonic() + 30
        while not (opened.exists() and opened.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert opened.read_text().strip() == home, stderr
    assert "no browser" not in stderr


def test_serve_open_says_so_when_no_browser_can_be_opened(tmp_path):
    (tmp_path / "list.md").write_text("- https://a.example/\n", encoding="utf-8")
    process, home = _serve_open(tmp_path, "no-such-browser")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)  # (until the process ends)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not any("no browser" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=10)
        reader.join(timeout=10)
    assert f"no browser could be opened here: open {home} in yours\n" in lines, lines
