"""Issue 44 item 2: ReplayWeb.page's own search finds Chinese words mid-sentence in an exported WACZ.

ReplayWeb.page (npm `replaywebpage`, its built app: index.html, ui.js, sw.js) is served with the
exported WACZ from 127.0.0.1 (a secure context, so its service worker runs), opened in Debian's
chromium by Playwright with the WACZ as its source and a query in its page list: the pages found
are the ones whose text holds the word. Its search (FlexSearch with its defaults) finds only
whole words, which a Chinese sentence is one of; the export writes the words out after the text.

The app comes from `.ci/run` (`npm pack replaywebpage`, unpacked into .cache/replaywebpage), or
$MIRROR_REPLAYWEBPAGE: the test is skipped without it, and fails under CI."""

from __future__ import annotations

import functools
import os
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .helpers import ROOT, chromium_or_skip
from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")
APP = Path(os.environ.get("MIRROR_REPLAYWEBPAGE") or ROOT / ".cache" / "replaywebpage" / "package")
TAX = "根据财政部的公告，企业研发费用加计扣除等到期税收优惠政策延续执行至二〇二七年底，惠及更多中小企业。"
RAIL = "京沪高铁今年的客流量创下新高，节假日期间增开的夜间动车组列车几乎全部满员。"
ENGLISH = "Rotary position embeddings encode relative distance inside the attention product of every layer."


class _Files(SimpleHTTPRequestHandler):
    """Static files with byte ranges, which ReplayWeb.page reads a WACZ by."""

    def log_message(self, *args):
        pass

    def send_head(self):
        found = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
        path = Path(self.translate_path(self.path))
        if not found or not path.is_file():
            return super().send_head()
        data = path.read_bytes()
        start, end = int(found[1]), min(int(found[2] or len(data) - 1), len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        import io

        return io.BytesIO(data[start : end + 1])


@pytest.fixture
def served(cli, tmp_path, web):
    if not (APP / "ui.js").is_file() or not (APP / "sw.js").is_file():
        message = f"ReplayWeb.page is not at {APP}: `npm pack replaywebpage` and unpack it there (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    chromium_or_skip()
    urls = [web.add("/tax", article("财政公告", TAX)), web.add("/rail", article("铁路客流", RAIL)), web.add("/rope", article("Positions", ENGLISH))]
    assert cli("fetch", *urls, *QUICK).exit_code == 0
    site = tmp_path / "site"
    shutil.copytree(APP, site)
    result = cli("export", "wacz", str(site / "export.wacz"))
    assert result.exit_code == 0, result.output
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Files, directory=str(site)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_replaywebpage_search_finds_chinese_words_mid_sentence(served):
    from playwright.sync_api import sync_playwright

    from .helpers import CHROMIUM

    wanted = {
        "税收": ["财政公告"],  # 到期税收优惠: mid-sentence, two characters
        "加计扣除": ["财政公告"],
        "中小": ["财政公告"],
        "客流量": ["铁路客流"],  # three characters
        "动车组": ["铁路客流"],
        "满员": ["铁路客流"],
        "attention": ["Positions"],
        "航天": [],
    }
    found = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            for word, titles in wanted.items():
                page.goto(f"{served}/?source={served}/export.wacz#view=pages&query={word}")
                page.get_by_text(re.compile(rf"^{len(titles)} Pages?$")).wait_for(timeout=60_000)  # the list's count, once searched
                page.wait_for_timeout(500)
                found[word] = page.locator("wr-page-entry").evaluate_all("entries => entries.map(e => (e.shadowRoot || e).textContent)")
        finally:
            browser.close()
    for word, titles in wanted.items():
        assert [any(title in entry for entry in found[word]) for title in titles] == [True] * len(titles), (word, found[word])
        assert len(found[word]) == len(titles), (word, found[word])
