"""An archive fetched from hostile pages, for the reader, search, CLI and Chromium tests.

Every attack of issue 10 that lives in archived content or seeds is in it:
an image alt text that becomes markup if pasted unescaped, a bookmarklet
bookmark, javascript: links in an article, terminal escapes in a text/plain
page, a script capture and a title full of rich markup.
"""

from __future__ import annotations

from pathlib import Path

from mirror.fetch import FetchOptions, run
from mirror.seeds import read_seeds
from mirror.store import Archive

from .helpers import extraction_pool
from .webserver import HostileServer

WORDS = "Hostile archive test article about tiling attention kernels and memory bandwidth on accelerators. " * 4

XSS_ALT = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Alt text attack</title></head><body>
<article><h1>Alt text attack</h1>
<p>{WORDS}</p>
<p><img src="/not-archived.png" alt="&lt;img src=x onerror=alert('alt')//"></p>
<p>Read more: <a href="javascript:alert('link')">click javascript</a> and <a href="vbscript:msgbox(1)">this</a> too.</p>
<p>"&gt;&lt;img src=x onerror=alert('text')&gt; {WORDS}</p>
<script>alert('inline')</script>
</article></body></html>"""

MARKUP_TITLE = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>[/] [bold red]markup[/]\
 &lt;script&gt;alert('title')&lt;/script&gt;</title></head>
<body><article><h1>[/] [bold red]markup[/] &lt;script&gt;alert('title')&lt;/script&gt;</h1><p>{WORDS}</p></article></body></html>"""

# OSC 0 (window title), OSC 52 (clipboard write), CSI colour, a carriage-return overwrite, a C1 CSI
TERMINAL = (
    "Terminal escapes in a plain text page.\n\x1b]0;pwned title\x07\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07"
    "\x1b[31mescapeword in red\x1b[0m\rOVERWRITTEN \x9b31m C1 too.\n" + WORDS
)

SCRIPT = b"alert('script capture'); document.cookie;"

BOOKMARKLET = "javascript:(function(){alert('bookmarklet')})()"


def bookmarks(urls: dict[str, str]) -> str:
    rows = "\n".join(f'    <DT><A HREF="{url}">{name}</A>' for name, url in urls.items())
    return f"""<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3>Hostile</H3>
    <DL><p>
{rows}
    </DL><p>
</DL><p>
"""


def build(folder: Path) -> Path:
    """Fetch the hostile pages into folder/archive (the server is gone afterwards)."""
    with HostileServer() as web:
        urls = {
            "Alt text attack": web.add("/xss-alt", XSS_ALT.encode()),
            "Markup title": web.add("/markup", MARKUP_TITLE.encode()),
            "Terminal escapes": web.add("/terminal", TERMINAL.encode(), content_type="text/plain; charset=utf-8"),
            "Script capture": web.add("/script.js", SCRIPT, content_type="text/javascript"),
            "Bookmarklet": BOOKMARKLET,
        }
        seeds = folder / "seeds"
        seeds.mkdir(parents=True)
        (seeds / "bookmarks.html").write_text(bookmarks(urls), encoding="utf-8")
        with Archive(folder / "archive") as archive, archive.lock():
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
    return folder / "archive"
