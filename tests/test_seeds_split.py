"""A long seed's lines read on two cores (a child process reads the second half): the links are
exactly those of one pass, and a child that fails or is left behind costs nothing but time."""

from __future__ import annotations

import json
import time

import pytest

from mirror.seeds import decode_seed, parse_text
from mirror.seeds import text as seeds_text
from mirror.seeds._child_call import ChildCall

from .conftest import SEEDS


def texts() -> list[str]:
    shared = [decode_seed(path.read_bytes())[0] for path in sorted(SEEDS.iterdir()) if path.is_file()]
    shared = [text for text in shared if text]
    return [
        *shared,
        "---\ntitle: front matter\nurl: https://not.a.link/\n---\n" + "\n".join(shared),  # split inside the notes
        "\n\n".join(shared) * 3,
        # the benchmark's shapes, small: title line + URL line, one line of URLs, unclosed <a>
        "\n".join(f"第 {i} 篇：分布式训练笔记\nhttps://example.com/p/{i}?utm_source=x\n" for i in range(300)),
        "## 节\n\nmlsys blog\n\n" + "\n".join(f"https://example.com/p/{i}\n说明 {i}" for i in range(200)),
        " ".join(f"https://example.com/p/{i}" for i in range(500)) + "\nDeepSpeedhttps://github.com/microsoft/DeepSpeed微软\n",
        "".join(f"<a href='https://example.com/p/{i}'>" for i in range(500)) + "\nhttps://github.com/openai/tritonPython\n",
    ]


@pytest.mark.parametrize("number", range(len(texts())))
def test_two_cores_find_exactly_what_one_pass_finds(monkeypatch, number):
    text = texts()[number]
    one_pass = parse_text(text, "notes.md")
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)  # every seed of 2+ lines goes through the child
    assert parse_text(text, "notes.md") == one_pass
    assert one_pass


def test_the_second_half_is_read_by_the_child(monkeypatch):
    """The function the parser names for its child exists there: a child that cannot find it
    fails, and the parent silently reads every line itself (as after a module moved)."""
    answers = []

    class Watched(ChildCall):
        def result(self):
            answers.append(super().result())
            return answers[-1]

    monkeypatch.setattr(seeds_text, "ChildCall", Watched)
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)
    assert parse_text(texts()[-4], "notes.md")
    assert answers and all(answer is not None for answer in answers)


def test_a_failing_child_leaves_the_work_to_this_process(monkeypatch):
    text = texts()[-4]
    one_pass = parse_text(text, "notes.md")

    class Failing(ChildCall):
        def __init__(self, module, function, *args):
            super().__init__(module, "no_such_function", *args)

    monkeypatch.setattr(seeds_text, "ChildCall", Failing)
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)
    assert parse_text(text, "notes.md") == one_pass


def test_the_child_returns_the_functions_result():
    with ChildCall("mirror.seeds.urls", "normalize", "HTTPS://Example.COM:443/a/../b?utm_source=x#top") as call:
        assert call.result() == "https://example.com/b"
    with ChildCall("mirror.seeds.urls", "no_such_function") as call:
        assert call.result() is None


def test_a_child_started_before_its_arguments_are_known():
    """`waiting`: its Python starts while the caller parses; the arguments go to its stdin."""
    rows = [("https://example.com/p/%d?utm_source=x" % i, i, 1, "第 %d 篇" % i, "读", "a,b", "1700000000") for i in range(30_000)]
    with ChildCall.waiting("mirror.seeds.imports", "_fields_of") as call:
        call.send(rows)  # several MB: more than a pipe holds while the child reads
        assert call.result() == seeds_imports_fields_of(rows)
    with ChildCall.waiting("mirror.seeds.imports", "_fields_of") as call:
        call._process.kill()  # a child that died: what is sent meets a closed pipe
        call._process.wait()
        call.send(rows)
        assert call.result() is None
    with ChildCall.waiting("mirror.seeds.no_such_module", "_fields_of") as call:
        call.send(rows)
        assert call.result() is None
    with ChildCall.waiting("mirror.seeds.imports", "_fields_of") as call:
        pass  # never given its arguments: killed at the block's end
    assert call._process.poll() is not None


def test_a_ctrl_c_as_a_waiting_child_starts_leaves_no_child(monkeypatch):
    """Waiting on its stdin, a child left behind would wait as long as this process lives."""
    started = []

    def start_then_interrupted(self, *args, start=ChildCall._start):
        start(self, *args)
        started.append(self._process)
        raise KeyboardInterrupt

    monkeypatch.setattr(ChildCall, "_start", start_then_interrupted)
    with pytest.raises(KeyboardInterrupt), ChildCall.waiting("mirror.seeds.imports", "_fields_of"):
        pass
    assert started[0].poll() is not None  # killed, and waited for


def seeds_imports_fields_of(rows):
    from mirror.seeds.imports import _fields_of

    return _fields_of(rows)


def test_no_child_is_left_behind_when_the_caller_fails():
    start = time.monotonic()
    with pytest.raises(ZeroDivisionError), ChildCall("time", "sleep", 60) as call:
        1 / 0  # noqa: B018
    assert call._process.poll() is not None  # killed, and waited for
    assert time.monotonic() - start < 30


# exports read on two cores: a long HTML file's or feed's child starts before the parse and is
# given the rows of its share once they are read (issue 28: "load as fast as a reading list")
BOOKMARKS = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<DL><p><DT><H3>训练</H3><DL><p>
<DT><A HREF="https://example.com/a" ADD_DATE="1700000000" TAGS="x">A</A>
<DT><H3>并行</H3><DL><p><DT><A HREF="https://example.com/b">B</A><DT><A HREF="mailto:x@y">mail</A></DL><p>
<DT><A HREF="https://example.com/c">C</A>
</DL><p><DT><A HREF="https://example.com/d">D</A></DL>
"""
PAGE = """<html><body><h2>Intro <a href="https://example.com/in-heading">in heading</a></h2>
<p><a href="https://example.com/p1">one</a> <a href="https://example.com/p2">two</a> <a href="/relative">rel</a></p>
<h3>Next <h4>inner</h4></h3><ul><li><a href="https://example.com/p3"><b>bold</b> title</a></li></ul></body></html>"""
RSS_ITEMS = """<item><title>第 {i} 期</title><link>https://example.com/w/{i}?utm_source=rss</link>
<pubDate>Tue, 0{d} Mar 2024 08:00:00 GMT</pubDate><category>周报</category></item>
<item><title>无链接 {i}</title></item>"""
ATOM_ENTRIES = """<entry><title>Post {i}</title><link rel="edit" href="https://blog.example/edit/{i}"/>
<link href="/posts/{i}"/><updated>2024-01-0{d}T00:00:00Z</updated><category term="gpu"/></entry>"""


def _exports() -> list[tuple[str, str]]:
    return [
        ("bookmarks.html", BOOKMARKS * 7),
        ("page.html", PAGE.replace("</body></html>", "") * 9 + "</body></html>"),
        ("ril_export.html", "<!DOCTYPE html>\n<html>\n<body>\n<h1>Unread</h1>\n<ul>\n" + "".join(  # (Pocket's shape: read from the text)
            f'<li><a href="https://example.com/p/{i}" time_added="{1_700_000_000 + i}" tags="a,{i % 3}">第 {i} 篇 &amp; co</a></li>\n'
            + ("</ul>\n<h1>Read Archive</h1>\n<ul>\n" if i == 20 else "") for i in range(40)) + "</ul>\n</body>\n</html>\n"),
        ("pocket.html", "<html><body><h1>Unread</h1><ul>" + "".join(
            f'<li><a href="https://example.com/p/{i}" time_added="{1_700_000_000 + i}" tags="a,{i % 3}">第 {i} 篇</a></li>\n' for i in range(40))
            + "</ul><h1>Read Archive</h1><ul><li><a href='https://example.com/done'>done</a></li></ul></body></html>"),
        ("weekly.rss", '<?xml version="1.0"?><rss version="2.0"><channel><title>周报</title>'
            + "".join(RSS_ITEMS.format(i=i, d=1 + i % 9) for i in range(30)) + "</channel></rss>"),
        ("authors.rss", '<?xml version="1.0"?><rss version="2.0"><channel><title>周报</title>'  # (an entry's child holds elements: the tree)
            + "".join(RSS_ITEMS.format(i=i, d=1 + i % 9).replace("</item>", "<author><name>x</name></author></item>", 1) for i in range(30))
            + "</channel></rss>"),
        ("blog.atom", '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title>'
            + "".join(ATOM_ENTRIES.format(i=i, d=1 + i % 9) for i in range(30)) + "</feed>"),
        ("pocket.csv", "title,url,time_added,tags,status\n" + "".join(f"第 {i} 篇,https://example.com/p/{i},{1_700_000_000 + i},a|b,unread\n" for i in range(40))),
        ("pinboard.json", json.dumps([{"href": f"https://example.com/b/{i}" if i % 7 else "", "description": f"第 {i} 篇", "tags": "gpu 注意力",
                                       "time": f"2023-01-0{1 + i % 9}T03:04:05Z", **({"folder": "读"} if i % 2 else {})} for i in range(40)])),
    ]


@pytest.mark.parametrize("name", [name for name, _ in _exports()])
def test_an_export_on_two_cores_gives_exactly_what_one_pass_gives(monkeypatch, tmp_path, name):
    from mirror.seeds import html as seeds_html
    from mirror.seeds import imports as seeds_imports
    from mirror.seeds.documents import read_seeds

    path = tmp_path / name
    path.write_text(dict(_exports())[name], encoding="utf-8")
    one_pass = read_seeds([path], base=tmp_path)
    answers = []

    class Watched(ChildCall):
        def result(self):
            answers.append((self._waiting, super().result()))
            return answers[-1][1]

    made_here = []  # the rows this process made links of: its share only, unless the child failed

    def fields_of(rows, fields_of=seeds_imports._fields_of):
        made_here.append(len(rows))
        return fields_of(rows)

    monkeypatch.setattr(seeds_html, "TWO_CORES", 2)
    monkeypatch.setattr(seeds_imports, "TWO_CORES", 2)
    for module in (seeds_imports, seeds_html):
        monkeypatch.setattr(module, "ChildCall", Watched)
        monkeypatch.setattr(module, "_fields_of", fields_of)
    two_cores = read_seeds([path], base=tmp_path)
    assert len(answers) == 1 and answers[0][1] is not None  # the child did its part
    # an HTML page or a feed read from the tree: its child started before the parse, given its rows
    # once they were read; an export read from its text (Pocket's, a plain feed): its child reads its own part
    assert answers[0][0] == (name in ("bookmarks.html", "page.html", "pocket.html", "authors.rss"))
    assert len(made_here) == 1 and made_here[0] < len(one_pass.links) * 0.7
    assert two_cores.links == one_pass.links and len(one_pass.links) >= 20
    assert two_cores.warnings == one_pass.warnings
    assert any(link.section for link in one_pass.links)


def test_a_ctrl_c_while_a_child_call_starts_leaves_no_file_behind(monkeypatch, tmp_path):
    """Its arguments (a whole export) are written to a temporary file before the child starts."""
    import tempfile

    from mirror.seeds import _child_call

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def pressed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_child_call.pickle, "dump", pressed)
    with pytest.raises(KeyboardInterrupt):
        with ChildCall("mirror.seeds.imports", "_fields_of", []):
            pass
    assert not list(tmp_path.iterdir())

