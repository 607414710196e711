"""Search: every query's hits compared exactly with a brute-force scan of the stored texts; the
ranking, the snippets, the bounds on what a query may cost, and `mirror search` as a process."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlite_utils

from mirror.search import (
    BARRIER,
    FTS_COLUMNS,
    MAX_LIMIT,
    MAX_TERMS,
    ZWSP,
    SearchError,
    SearchTimeout,
    bigrams,
    build_match,
    check_query,
    desegment,
    ensure_index,
    index_insert,
    search,
    segment,
)

from .helpers import QUICK_ARGS, db_of, ds_get
from .webserver import article

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"


TOKEN = re.compile(rf"[{CJK}]|(?:(?![{CJK}])[^\W_])+")


CJK_ONLY = re.compile(rf"^[{CJK}]+$")


def fold(token: str) -> str:
    """Case and Latin diacritics, as unicode61 remove_diacritics folds them (kana keep theirs)."""
    if re.match(f"[{CJK}]", token):
        return token
    return "".join(c for c in unicodedata.normalize("NFD", token.lower()) if unicodedata.category(c) != "Mn")


def tokens(text: str) -> list[str]:
    return [fold(t) for t in TOKEN.findall(text)]


def contains_sequence(haystack: list[str], needle: list[str], prefix: bool) -> bool:
    n = len(needle)
    for i in range(len(haystack) - n + 1):
        window = haystack[i : i + n]
        if window[:-1] == needle[:-1] and (window[-1].startswith(needle[-1]) if prefix else window[-1] == needle[-1]):
            return True
    return False


def _term(word: str, phrase: bool, in_title: bool):
    """(kind, value, prefix, title only) of one word or phrase; None when it has no tokens."""
    prefix = word.endswith("*") and not phrase
    toks = tokens(word)
    if not toks:
        return None
    joined = "".join(toks)
    if CJK_ONLY.match(joined) and all(len(t) == 1 for t in toks):
        return ("substring", joined, False, in_title)
    return ("tokens", toks, prefix and not CJK_ONLY.match(toks[-1]), in_title)


def query_groups(query: str) -> list[list[tuple]]:
    """The query's terms in groups: every group must match, any term of one (`a OR b`); `title:`
    restricts a word or the phrase after it to the title."""
    items: list = []
    title_next = False
    for piece in re.split(r'("[^"]*")', query):
        if piece.startswith('"') and piece.endswith('"') and len(piece) >= 2:
            items.append(_term(piece[1:-1], True, title_next))
            title_next = False
            continue
        title_next = False
        words = piece.replace('"', " ").split()
        for k, word in enumerate(words):
            if word == "OR":
                items.append("OR")
            elif word.lower().startswith("title:") and len(word) == 6:
                title_next = k == len(words) - 1 and not piece[-1:].isspace()
            elif word.lower().startswith("title:"):
                items.append(_term(word[6:], False, True))
            else:
                items.append(_term(word, False, False))
    groups: list[list[tuple]] = []
    joining = False
    for k, item in enumerate(items):
        if item == "OR":
            after = items[k + 1] if k + 1 < len(items) else None
            if groups and after not in (None, "OR"):
                joining = True
                continue
            item = _term("OR", False, False)
        if item is None:
            continue
        if joining:
            groups[-1].append(item)
        else:
            groups.append([item])
        joining = False
    return groups


def brute_force(docs: dict[str, list[str]], query: str) -> set[str]:
    """Pages whose title, text, author or sitename contain every term of `query` (any of the
    terms `OR` joins; a `title:` term in the title).

    A Chinese/Japanese word is a plain substring; other words are whole
    tokens (case-insensitive), `word*` a token prefix, "a phrase" consecutive
    tokens. Zero-width spaces and U+E000 in stored texts are ignored.
    """
    groups = query_groups(query)
    if not groups:
        return set()
    hits = set()
    for url, columns in docs.items():
        clean = [c.replace(ZWSP, "").replace(BARRIER, "") for c in columns]
        columns_tokens: dict[int, list[str]] = {}  # made when a term needs them
        if all(any(_found(term, clean, columns_tokens) for term in group) for group in groups):
            hits.add(url)
    return hits


def _found(term: tuple, clean: list[str], columns_tokens: dict[int, list[str]]) -> bool:
    kind, value, prefix, in_title = term
    where = range(1) if in_title else range(len(clean))  # (the title is the first column)
    if kind == "substring":
        return any(value in clean[i] for i in where)
    for i in where:
        if i not in columns_tokens:
            columns_tokens[i] = tokens(clean[i])
        if contains_sequence(columns_tokens[i], value, prefix):
            return True
    return False


@pytest.fixture(scope="module")
def corpus_db(corpus_archive):
    return sqlite_utils.Database(corpus_archive / "mirror.db")


@pytest.fixture(scope="module")
def docs(corpus_db):
    rows = corpus_db.query(f"select url, {', '.join(FTS_COLUMNS)} from pages where status = 'archived'")
    return {r["url"]: [r[c] or "" for c in FTS_COLUMNS] for r in rows}


QUERIES = [
    # Chinese: 1, 2, 3 and 4 characters, common and rare, and absent
    "的",
    "股",
    "鞠",
    "记者",
    "手机",
    "延迟",
    "显存",
    "互联网",
    "工程师",
    "人工智能",
    "新冠肺炎",
    "显存优化",
    # Japanese kana
    "です",
    # English: case-insensitive words, prefixes, phrases
    "the",
    "Python",
    "FACEBOOK",
    "comput*",
    "Face*",
    '"machine learning"',
    '"open source"',
    '"the first"',
    '"Twitter Lite"',
    # mixed: all terms must match
    "Python 数据",
    "Facebook 隐私",
    "Galaxy 三星",
    "5G 手机",
    # FTS syntax typed by a person: treated as plain words
    '"unbalanced',
    "NEAR",
    "python NEAR java",
    "(python",
    "Megatron-LM",
    "C++",
    "-python",
    "title:python",
    "AND",
    # a small grammar: OR between two terms, title: before a word or a phrase
    "python OR java",
    "记者 OR 手机",
    "Facebook OR Twitter 隐私",
    "OR python",
    "python OR",
    "title:记者",
    "title:的",
    'title:"machine learning"',
    "title:Face* 隐私",
    "a*b",
    '"中国"',
    '"中 国"',
    "*",
    # empty
    "",
    "   ",
]


def _imported(result) -> set[str]:
    """The modules a process run with -X importtime imported (its stderr)."""
    return {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("query", QUERIES)
def test_search_matches_brute_force(corpus_db, docs, query):
    expected = brute_force(docs, query)
    got = {hit.url for hit in search(corpus_db, query, limit=100_000)}
    assert got == expected


def test_matrix_is_not_trivial(docs):
    """The matrix above exercises hits of every kind, not only empty sets."""
    counts = {q: len(brute_force(docs, q)) for q in QUERIES}
    for query in ("的", "记者", "互联网", "人工智能", "です", "the", "comput*", '"open source"', '"the first"', "Python 数据"):
        assert counts[query] > 0, query
    assert counts["显存优化"] == 0 and counts[""] == 0
    assert 0 < counts["股"] < counts["的"]


def test_two_character_words_are_found_where_trigram_would_fail(corpus_db, docs):
    for word in ("记者", "手机", "延迟"):
        hits = {h.url for h in search(corpus_db, word, limit=1000)}
        assert hits and hits == {u for u, cols in docs.items() if any(word in c for c in cols)}


def test_snippets_show_original_text_with_marks(corpus_db):
    hits = search(corpus_db, "人工智能", limit=5)
    assert hits
    for hit in hits:
        assert ZWSP not in hit.snippet and BARRIER not in hit.snippet
        marked = hit.as_dict(("<<", ">>"))["snippet"]
        assert "<<人工智能>>" in marked


def test_title_outranks_body(tmp_path):
    from mirror.extract.article import Extraction
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    with Archive(tmp_path) as archive:
        archive.record_inventory(links_from_urls(["https://a.example/body", "https://a.example/title"]))
        for url, title, text in [
            ("https://a.example/body", "无关标题", "正文里提到了显存。" + "其他内容。" * 40),
            ("https://a.example/title", "显存优化", "正文没有那个词。" + "其他内容。" * 40),
        ]:
            archive.save_extraction(url, Extraction(status="archived", kind="html", title=title, text=text, markdown=text))
        hits = search(archive.db, "显存")
    assert [h.url for h in hits] == ["https://a.example/title", "https://a.example/body"]


def test_cli_and_api_agree(corpus_archive, corpus_db, cli):
    for query in ("人工智能", "Python 数据", '"machine learning"'):
        result = cli("search", query, "--json", "--limit", "1000", "--archive", str(corpus_archive))
        assert result.exit_code == 0
        cli_urls = [h["url"] for h in json.loads(result.stdout)]
        assert cli_urls == [h.url for h in search(corpus_db, query, limit=1000)]
        assert all({"url", "title", "snippet", "score"} <= set(h) for h in json.loads(result.stdout))


def test_search_filters_by_site_reading_list_and_section(corpus_archive, corpus_db, cli, tmp_path):
    all_hits = search(corpus_db, "的", limit=1000)
    site = all_hits[0].url.split("/")[2]
    assert {h.url for h in search(corpus_db, "的", limit=1000, site=site)} == {h.url for h in all_hits}
    assert search(corpus_db, "的", site="no.such.site") == []
    # several hosts: the filter keeps one host, its subdomains, or one site name
    from mirror.extract.article import Extraction
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    pages = {
        "https://a.example/1": "A site",
        "https://blog.a.example/2": "A blog",
        "https://b.example/3": "B site",
        "https://ab.example/4": "A site",
    }
    with Archive(tmp_path / "sites") as archive:
        archive.record_inventory(links_from_urls(list(pages)))
        for url, name in pages.items():
            text = "显存优化的正文。" * 20
            archive.save_extraction(url, Extraction(status="archived", kind="html", title="显存", text=text, sitename=name))
        found = {site: {h.url for h in search(archive.db, "显存", site=site)} for site in ("a.example", "b.example", "A site", "c.example")}
    assert found == {
        "a.example": {"https://a.example/1", "https://blog.a.example/2"},
        "b.example": {"https://b.example/3"},
        "A site": {"https://a.example/1", "https://ab.example/4"},
        "c.example": set(),
    }
    assert search(corpus_db, "的", seed="(command line)", limit=1000)
    assert search(corpus_db, "的", section="nowhere") == []
    result = cli("search", "的", "--site", "no.such.site", "--archive", str(corpus_archive))
    assert result.exit_code == 0 and "no saved article matches" in result.output


def test_segmented_text_reads_back_and_queries_become_bigrams():
    text = "FlashAttention通过分块，减少显存 访问；Ｈello 世界"
    assert desegment(segment(text)) == text
    assert build_match("") is None and build_match('" * ( ') is None
    assert build_match("显") == '"显"'
    assert build_match("显存优化") == '"显存 存优 优化"'  # overlapping bigrams
    assert build_match('"中 国"') == '"中国"'
    assert bigrams("显存优化，Flash显存", "作者") == "显存 存优 优化 \ue000 显存 \ue000 作者"
    assert build_match("comput*") == '"comput"*'


def test_a_word_in_most_articles_ranks_the_newest_matches_only(tmp_path, monkeypatch):
    """Issue 29: past RANKED_AT_MOST matches, the most recently added are ranked (bm25 costs per
    match); with a filter, or at most that many matches, every match is."""
    from mirror._types import Extraction
    from mirror.search import query as search_query
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    urls = [f"https://site{i % 2}.example/{i}" for i in range(30)]
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(urls))
        archive.save_extractions(
            [
                (
                    url,
                    Extraction(
                        status="archived",
                        kind="html",
                        title=f"common {i}",
                        sitename=f"site{i % 2}.example",
                        text=f"common word in article {i}. " + "filler " * (i % 7),
                    ),
                )
                for i, url in enumerate(urls)
            ]
        )
        db = archive.db
        everything = [hit.id for hit in search_query.search(db, "common", limit=30)]
        assert len(everything) == 30
        monkeypatch.setattr(search_query, "RANKED_AT_MOST", 10)
        ids = sorted(db.execute("select id from pages").fetchall())
        newest = {row[0] for row in ids[-10:]}
        bounded = [hit.id for hit in search_query.search(db, "common", limit=30)]
        assert set(bounded) == newest
        assert bounded == [i for i in everything if i in newest]  # the same order among them
        filtered = search_query.search(db, "common", limit=30, site="site0.example")
        assert len(filtered) == 15  # a filter ranks every match
        monkeypatch.setattr(search_query, "RANKED_AT_MOST", 15)
        assert len(search_query.search(db, "site1", limit=30)) == 15  # at most that many matches: all ranked


def test_snippets_mark_words_beside_chinese_and_without_their_accents(tmp_path):
    """The index keeps no text (issue 29): snippets are marked in the page's own text, where a word
    ends at a Chinese character as the index's tokens do, and case and accents are folded as there."""
    from mirror._types import Extraction
    from mirror.search import query as search_query
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    url = "https://example.com/gpu"
    text = "我们用GPU加速训练，基于Transformer的模型。The café serves naïve drinkers; CAFE culture."
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls([url]))
        archive.save_extraction(url, Extraction(status="archived", kind="html", title="加速", text=text))
        marked = {q: search_query.search(archive.db, q)[0].as_dict()["snippet"] for q in ("GPU", "Transformer", "cafe", "naive", "GPU加速")}
    assert "用[GPU]加速" in marked["GPU"] and "于[Transformer]的" in marked["Transformer"]
    assert "[café]" in marked["cafe"] and "[CAFE]" in marked["cafe"] and "[naïve]" in marked["naive"]
    assert "[GPU]" in marked["GPU加速"]  # found at all: "GPU加速" is GPU, 加, 速 as indexed


def test_snippets_mark_a_word_that_begins_with_another_and_words_past_the_first_lines(tmp_path):
    """Snippets are looked for in the first 2,000 characters, then further: a word cut there is
    not taken for a shorter one, and a window near the cut shows its whole width. "ca cat" marks
    "cat" (the shorter word, tried first, is no whole word there); Hangul words beside others too."""
    from mirror._types import Extraction
    from mirror.search import query as search_query
    from mirror.seeds import links_from_urls
    from mirror.store import Archive

    near = "https://example.com/near"
    far = "https://example.com/far"
    pages = {
        near: "Gophers: the golang people call it golang. Go is fast. 한국어 한국한국 and pythonic code, in python.",
        far: "z " * 999 + "cats " + "y " * 40 + "a lone cat here " + "q " * 200,
    }
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(list(pages)))
        for url, text in pages.items():
            archive.save_extraction(url, Extraction(status="archived", kind="html", title="笔记", text=text))

        def snippet(query: str, url: str) -> str:
            return next(h for h in search_query.search(archive.db, query) if h.url == url).as_dict()["snippet"]

        assert "call it [golang]. [Go] is" in snippet("go golang", near)
        assert "[pythonic]" in snippet("python py*", near)
        assert "[한국]어 [한국한국]" in snippet("한국", near)  # (adjacent marks are one)
        lone = snippet("cat", far)
        assert "[cat]" in lone and "[cats]" not in lone and "a lone [cat] here" in lone
        assert lone.endswith("…") and len(lone) > 90  # the window's whole width, not cut at 2,000 characters


@pytest.mark.parametrize("options", [(), ("--json",)])
def test_mirror_search_as_a_process_prints_every_hit_and_loads_no_more_than_it_needs(corpus_archive, tmp_path, options):
    """Issue 29: a search is started and ended as a process a person waits for. Neither rich (50 ms
    to import) nor the fetch values (9 ms to make) are loaded, and what it printed is all there."""
    import subprocess
    import sys

    expected = search(sqlite_utils.Database(corpus_archive / "mirror.db"), "的", limit=20)
    assert len(expected) == 20
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mirror", "search", "的", *options, "--archive", str(corpus_archive)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = _imported(result)
    assert "mirror.search.query" in imported
    assert not {name for name in imported if name == "rich" or name.startswith(("rich.", "mirror._types", "mirror.seeds", "mirror.fetch"))}
    if options:
        assert [hit["url"] for hit in json.loads(result.stdout)] == [hit.url for hit in expected]
    else:
        for n, hit in enumerate(expected, 1):
            assert f"(mirror show {hit.id})" in result.stdout and f"{n}. " in result.stdout
        assert "\x1b" not in result.stdout  # not a terminal: no styles
    # a reader that stops reading: no traceback, no complaint
    reader = subprocess.Popen(
        [sys.executable, "-m", "mirror", "search", "的", "--limit", "200", *options, "--archive", str(corpus_archive)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    reader.stdout.read(10)
    reader.stdout.close()
    assert reader.wait(timeout=120) in (0, 1, -13) and b"Traceback" not in reader.stderr.read()


def test_mirror_search_reads_its_options_and_says_what_is_wrong_with_them(corpus_archive, tmp_path):
    """typer reads `mirror search`'s options, as every command's: help, a repeated option, a
    value out of range, a missing or unusable archive each get their answer."""
    import subprocess
    import sys

    def run(*args: str):
        return subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "mirror", "search", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )

    quick = run("的", "--limit", "3", "--archive", str(corpus_archive))
    assert quick.returncode == 0 and quick.stdout.count("(mirror show ") == 3
    again = run("的", "--limit", "9", "--limit=3", "--archive", str(corpus_archive))  # (typer takes the last)
    assert again.returncode == 0 and again.stdout == quick.stdout
    words = run("--json", "--archive", str(corpus_archive), "--", "--json")  # (after --, words)
    assert words.returncode == 0 and isinstance(json.loads(words.stdout), list)  # (the query "--json", as JSON)
    assert (missing := run("的", "--archive", str(tmp_path / "none"))).returncode == 1 and "no archive here" in missing.stderr
    assert (bad := run("的", "--limit", "0", "--archive", str(corpus_archive))).returncode == 2 and "--limit" in bad.stderr
    assert (shown := run("--help")).returncode == 0 and "--section" in shown.stdout
    assert (nothing := run("zzqqxx", "--archive", str(corpus_archive))).returncode == 0 and "no saved article matches 'zzqqxx'" in nothing.stderr
    too_long = run("x", "--archive", "y" * 300)
    assert too_long.returncode == 1 and "cannot use the archive" in too_long.stderr and "Traceback" not in too_long.stderr


def test_a_search_stopped_by_ctrl_c_ends_as_interrupted_not_as_timed_out(corpus_archive, monkeypatch, capsys):
    """sqlite3 swallows an exception raised in its progress handler: a Ctrl-C during the query
    read as the search's time limit (exit 2, "use fewer words"). It ends as typer ends one: 130."""
    import signal
    import sys

    from mirror.cli import entry
    from mirror.search import query

    class Clock:
        calls = 0

        def monotonic(self) -> float:
            Clock.calls += 1
            if Clock.calls == 2:  # (the first reading sets the deadline; the second is SQLite's first look)
                raise KeyboardInterrupt
            return 0.0

    monkeypatch.setattr(query, "time", Clock())
    monkeypatch.setattr(query, "_CHECK_EVERY", 1)
    with pytest.raises(KeyboardInterrupt):
        search(sqlite_utils.Database(corpus_archive / "mirror.db"), "的 OR the OR a", limit=1000)
    assert Clock.calls == 2
    Clock.calls = 0
    monkeypatch.setattr(sys, "argv", ["mirror-under-test", "search", "的 OR the OR a", "--limit", "1000", "--archive", str(corpus_archive)])
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stopped:
            entry.main()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped.value.code == 130 and "interrupted" in capsys.readouterr().err


def test_search_styles_its_output_only_for_a_colour_terminal(cli, corpus_archive, monkeypatch):
    """As rich decides it (the output was rich's before `mirror search` wrote it itself)."""
    from mirror.cli._common import TerminalStyle

    class Terminal:
        def isatty(self) -> bool:
            return True

    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert TerminalStyle(Terminal())("word", "bold", "yellow") == "\x1b[1;33mword\x1b[m"
    assert TerminalStyle(object())("word", "bold") == "word"  # a pipe, a file
    monkeypatch.setenv("NO_COLOR", "1")  # no colours; bold and dim stay
    assert TerminalStyle(Terminal())("word", "bold", "yellow") == "\x1b[1mword\x1b[m"
    assert TerminalStyle(Terminal())("word", "cyan") == "word"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert TerminalStyle(Terminal())("word", "bold") == "word"
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert TerminalStyle(object())("word", "bold") == "\x1b[1mword\x1b[m"
    monkeypatch.delenv("TTY_COMPATIBLE")
    monkeypatch.setenv("FORCE_COLOR", "1")
    for term in ("dumb", "unknown"):
        monkeypatch.setenv("TERM", term)
        assert TerminalStyle(Terminal())("word", "bold") == "word"
    monkeypatch.setenv("TERM", "xterm")  # FORCE_COLOR: colours even into a pipe
    result = cli("search", "的", "--limit", "3", "--archive", str(corpus_archive))
    assert result.exit_code == 0
    assert "\x1b[1;33m的\x1b[m" in result.output  # each match marked
    assert re.search(r"\x1b\[1m1\. [^\x1b\n]+\x1b\[m  \x1b\[2m\(mirror show \d+\)\x1b\[m", result.output)
    assert not re.search("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]", result.output)  # no control character but ours
    snippets = result.output.splitlines()[2::4]  # each hit: title, address, snippet, a blank line
    assert len(snippets) == 3 and all(line.endswith("\x1b[m") for line in snippets)  # every style ended


def test_mirror_search_says_when_its_output_cannot_be_written(corpus_archive, tmp_path):
    """An output that could not be written (a full disk) is an error, said once, without a traceback."""
    import os
    import subprocess
    import sys

    run = lambda *args, **options: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "mirror", "search", "的", *args, "--archive", str(corpus_archive)],
        cwd=tmp_path,
        capture_output="stdout" not in options,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
        **options,
    )
    if Path("/dev/full").exists():  # (Linux) a full disk
        for options in ((), ("--json",)):
            with open("/dev/full", "w") as full:
                result = run(*options, stdout=full, stderr=subprocess.PIPE)
            assert result.returncode == 120 and b"could not be written" in result.stderr, result.stderr
    if Path("/dev/full").exists():  # `mirror show` too (rich writes it)
        page = str(next(sqlite_utils.Database(corpus_archive / "mirror.db").query("select id from pages where text != '' limit 1"))["id"])
        with open("/dev/full", "w") as full:
            shown = subprocess.run(
                [sys.executable, "-m", "mirror", "show", page, "--archive", str(corpus_archive)],
                cwd=tmp_path,
                stdout=full,
                stderr=subprocess.PIPE,
                timeout=120,
            )
        assert shown.returncode == 120 and b"could not be written" in shown.stderr and b"Traceback" not in shown.stderr, shown.stderr[-500:]
    result = run(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert result.returncode == 0 and not result.stderr
    ascii_only = subprocess.run(
        [sys.executable, "-m", "mirror", "search", "的", "--archive", str(corpus_archive)],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        env=os.environ | {"PYTHONIOENCODING": "ascii"},
    )
    assert ascii_only.returncode == 1 and b"PYTHONIOENCODING=utf-8" in ascii_only.stderr and b"Traceback" not in ascii_only.stderr


def test_folding_for_snippets_is_the_tables_whatever_else_the_text_holds():
    """`lower()` is taken where it is exact: a word's last Σ is one place where it is not."""
    from mirror.search.query import _FOLD, _folded

    for text in ("ΟΔΟΣ", "Η ΟΔΟΣ café", "ΣΑΣ.", "Straße İstanbul", "显存 FlashAttention", "한국어", "\uf900", "ǅ"):
        assert _folded(text) == text.translate(_FOLD), text


@pytest.mark.hostile
def test_repeated_terms_count_once_and_distinct_terms_are_capped():
    assert build_match("w1* " * 200) == '"w1"*'
    assert build_match("common " * 2000) == '"common"'
    many = " ".join(f"w{i}*" for i in range(2500))
    assert build_match(many).count(" AND ") == MAX_TERMS - 1  # datasette's table search stays bounded too
    with pytest.raises(SearchError, match=f"at most {MAX_TERMS}"):
        check_query(" ".join(f"w{i}" for i in range(MAX_TERMS + 1)))
    with pytest.raises(SearchError, match="characters long"):
        check_query("x" * 5000)
    check_query("显存 " * 300)  # repeats are free


@pytest.mark.hostile
def test_a_search_past_its_time_limit_is_stopped(tmp_path):
    db = sqlite_utils.Database(tmp_path / "big.db")
    db.execute("create table pages (id integer primary key, url text, title text, sitename text, date text, text text, host text)")
    ensure_index(db)  # (an external-content index of `pages`: made after it)
    with db.atomic():  # (one transaction: sqlite-utils commits each statement alone, an fsync each)
        for i in range(1, 3001):
            row = {"title": f"common page {i}", "text": "common words " * 20}
            db.execute("insert into pages (id, url, title, text) values (?, ?, ?, ?)", [i, f"http://x/{i}", row["title"], row["text"]])
            db.execute(*index_insert(i, row))
    assert len(search(db, "common", limit=5)) == 5
    with pytest.raises(SearchTimeout, match="stopped after"):
        search(db, "common", time_limit=0)
    assert len(search(db, "common", limit=5)) == 5  # the connection is usable afterwards


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("limit=abc&q=hostile", 400, "limit must be a whole number"),
        ("limit=-1&q=hostile", 400, "at least 1"),
        ("limit=0&q=hostile", 400, "at least 1"),
        ("limit=99999999999&q=hostile", 200, None),
        ("q=" + quote(" ".join(f"w{i}*" for i in range(100))), 400, f"at most {MAX_TERMS}"),
        ("q=" + quote("w1* " * 2500), 400, "characters long"),
    ],
)
def test_plugin_search_validates_limit_and_query(hostile_ds, query, status, message):
    for fmt in ("", "&_format=json"):
        response = ds_get(hostile_ds, f"/-/mirror/search?{query}{fmt}")
        assert response.status_code == status, response.text[:300]
        if message:
            assert message in (response.json()["error"] if fmt else response.text)


@pytest.mark.hostile
def test_cli_search_refuses_unbounded_queries(cli, hostile_archive):
    result = cli("search", " ".join(f"w{i}" for i in range(40)), "--archive", str(hostile_archive))
    assert result.exit_code == 2 and f"at most {MAX_TERMS}" in result.output and "Traceback" not in result.output
    for bad in ("0", str(MAX_LIMIT + 1), "abc"):
        result = cli("search", "hostile", "--limit", bad, "--archive", str(hostile_archive))
        assert result.exit_code == 2


def test_search_shows_the_id_show_takes_and_names_a_filter_that_matches_nothing(cli, tmp_path, web):
    url = web.add("/post", article("显存优化", "重计算节省显存。"))
    assert cli("fetch", url, *QUICK_ARGS).exit_code == 0
    page_id = db_of(tmp_path)["pages"].get(url)["id"]
    result = cli("search", "显存")
    assert f"mirror show {page_id}" in result.stdout
    assert "显存优化" in cli("show", str(page_id)).stdout
    assert "显存优化" in cli("show", url.removeprefix("http://")).stdout  # as `links` reads a URL without its scheme
    result = cli("search", "显存", "--site", "nosuch.example")
    assert result.exit_code == 0 and "--site 'nosuch.example'" in result.stderr and "filter" in result.stderr
