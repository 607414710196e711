"""Imports as seeds (issue 28 item 4): the exports of the services people leave, each read from a
real-shaped sample, with titles, tags and dates kept, and bad rows reported with their line;
feeds, read from a file or given to `mirror fetch` as a URL."""

from __future__ import annotations

import json

import pytest

from .helpers import links_json

POCKET_HTML = """<!DOCTYPE html>
<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8"><title>Pocket Export</title></head>
<body><h1>Unread</h1>
<ul>
<li><a href="https://zhuanlan.zhihu.com/p/1?utm_source=pocket" time_added="1700000000" tags="mlsys,注意力">FlashAttention 详解</a></li>
<li><a href="https://example.com/b" time_added="1700000100" tags="">Untagged</a></li>
</ul>
<h1>Read Archive</h1>
<ul>
<li><a href="https://example.com/read" time_added="1690000000" tags="done">Read one</a></li>
</ul></body></html>
"""


POCKET_CSV = """title,url,time_added,tags,status
FlashAttention 详解,https://zhuanlan.zhihu.com/p/1,1700000000,mlsys|注意力,unread
"Quoted, with comma",https://example.com/q,1700000100,,archive
no url here,,1700000200,,unread
"""


PINBOARD = [
    {
        "href": "https://arxiv.org/abs/2205.14135",
        "description": "FlashAttention",
        "extended": "",
        "tags": "attention gpu",
        "time": "2023-01-02T03:04:05Z",
        "shared": "no",
        "toread": "yes",
    },
    {"description": "no href"},
    {"href": "https://github.com/Dao-AILab/flash-attention", "description": "repo", "tags": "", "time": "2023-01-03T00:00:00Z"},
]


RAINDROP_CSV = """id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite
1,张量并行,,,https://www.cnblogs.com/x/p/1.html,Unsorted,"并行, 分布式",2024-05-06T07:08:09.000Z,,,false
2,Missing,,,,Unsorted,,2024-05-06T07:08:09.000Z,,,false
"""


INSTAPAPER_CSV = """URL,Title,Selection,Folder,Timestamp
https://mp.weixin.qq.com/s/abc,微信文章,,Unread,1710000000
"""


RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>MLSys 周报</title>
<item><title>第一期</title><link>https://example.com/weekly/1</link><pubDate>Tue, 05 Mar 2024 08:00:00 GMT</pubDate>
<category>周报</category><category>mlsys</category></item>
<item><title>没有链接的条目</title></item>
</channel></rss>
"""


ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom blog</title>
<entry><title>Post A</title><link rel="alternate" href="https://blog.example/a"/><link rel="edit" href="https://blog.example/edit/a"/>
<updated>2024-01-01T00:00:00Z</updated><category term="gpu"/></entry>
</feed>
"""


OPML = """<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><head><title>subscriptions</title></head><body>
<outline text="ML">
  <outline text="Lil'Log" type="rss" xmlUrl="https://lilianweng.github.io/index.xml" htmlUrl="https://lilianweng.github.io/"/>
</outline>
<outline text="Top level" type="rss" xmlUrl="https://example.com/feed.xml"/>
</body></opml>
"""


def read(cli, tmp_path, name: str, content: str) -> tuple[list[dict], str]:
    (tmp_path / name).write_text(content, encoding="utf-8")
    result = cli("links", name, "--json")
    assert result.exit_code == 0, result.output
    return links_json(result), result.stderr


def by_url(links: list[dict]) -> dict[str, dict]:
    return {link["url"]: link for link in links}


# Pocket's own export, as it wrote it: tabs, the comment, a meta, two lists
POCKET_EXPORT = """<!DOCTYPE html>
<html>
\t<!--So long and thanks for all the fish-->
\t<head>
\t\t<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
\t\t<title>Pocket Export</title>
\t</head>
\t<body>
\t\t<h1>Unread</h1>
\t\t<ul>
\t\t\t<li><a href="https://zhuanlan.zhihu.com/p/1?utm_source=pocket&amp;x=1" time_added="1700000000" tags="mlsys,注意力">FlashAttention 详解\
 &amp; 注释</a></li>
\t\t\t<li><a href="https://example.com/search?q=a&b=2" time_added="1700000100" tags="">Tom & Jerry&#39;s &quot;notes&quot; &lt;3</a></li>
\t\t\t<li><a href="https://example.com/empty" time_added="" tags=""></a></li>
\t\t\t<li><a href="   " time_added="1700000200" tags="x">no link</a></li>
\t\t</ul>
\t\t
\t\t<h1>Read Archive</h1>
\t\t<ul>
\t\t\t<li><a href="https://example.com/read" time_added="1690000000" tags="done">Read   one  </a></li>
\t\t</ul>
\t</body>
</html>
"""


# a bookmark service's RSS export: a channel head, CDATA descriptions, several categories
SERVICE_RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom">
  <channel>
    <title>My  bookmarks</title>
    <link>https://service.example/u/me</link>
    <description><![CDATA[Everything I <b>saved</b>]]></description>
    <atom:link href="https://service.example/u/me/rss" rel="self" type="application/rss+xml"/>
    <lastBuildDate>Tue, 05 Mar 2024 08:00:00 GMT</lastBuildDate>
    <item>
      <title>FlashAttention 详解 &amp; 注释</title>
      <link>https://zhuanlan.zhihu.com/p/1?a=1&amp;b=2</link>
      <guid isPermaLink="false">1</guid>
      <pubDate>Tue, 05 Mar 2024 08:00:00 GMT</pubDate>
      <description><![CDATA[<p>An article <a href="x">with markup</a></p>]]></description>
      <category>mlsys</category>
      <category>注意力</category>
      <dc:creator>someone</dc:creator>
    </item>
    <item>
      <title>Without a date &#8212; &#x1F600;</title>
      <link>  https://example.com/b  </link>
      <guid isPermaLink="false">2</guid>
      <description>plain &lt;escaped&gt; text</description>
    </item>
    <item>
      <title>No link</title>
      <guid isPermaLink="false">3</guid>
    </item>
    <item><title/><link>https://example.com/c</link><pubDate>Wed, 06 Mar 2024 09:10:11 GMT</pubDate><category/></item>
  </channel>
</rss>
"""


SERVICE_ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom blog</title>
<entry><title type="html">Post A</title><link rel="edit" href="https://blog.example/edit/a"/><link rel="alternate" href="https://blog.example/a"/>
<id>tag:a</id><updated>2024-01-01T00:00:00Z</updated><published>2023-12-01T00:00:00Z</published><category term="gpu"/><category term=""\
 label="x">text</category></entry>
<entry><title>Post B</title><link href="https://blog.example/b"/><updated>2024-01-02T00:00:00Z</updated></entry>
</feed>
"""


def _feed(text: str | bytes, base: str | None = None) -> tuple[list, list[str]]:
    from mirror.seeds.imports import parse_feed

    warnings: list[str] = []
    return parse_feed(text, "s", warnings.append, base), warnings


def test_pocket_html_keeps_titles_tags_dates_and_its_lists(cli, tmp_path):
    links, _ = read(cli, tmp_path, "ril_export.html", POCKET_HTML)
    first = by_url(links)["https://zhuanlan.zhihu.com/p/1"]
    assert (first["title"], first["tags"], first["added"], first["section"]) == (
        "FlashAttention 详解",
        "mlsys, 注意力",
        "2023-11-14T22:13:20+00:00",
        "Unread",
    )
    assert by_url(links)["https://example.com/read"]["section"] == "Read Archive"
    assert by_url(links)["https://example.com/b"]["tags"] is None


@pytest.mark.parametrize(
    "name, content, url, expected",
    [
        ("pocket.csv", POCKET_CSV, "https://zhuanlan.zhihu.com/p/1", ("FlashAttention 详解", "mlsys, 注意力", "2023-11-14T22:13:20+00:00", "unread")),
        ("raindrop.csv", RAINDROP_CSV, "https://www.cnblogs.com/x/p/1.html", ("张量并行", "并行, 分布式", "2024-05-06T07:08:09+00:00", "Unsorted")),
        ("instapaper.csv", INSTAPAPER_CSV, "https://mp.weixin.qq.com/s/abc", ("微信文章", None, "2024-03-09T16:00:00+00:00", "Unread")),
        (
            "pinboard.json",
            json.dumps(PINBOARD),
            "https://arxiv.org/abs/2205.14135",
            ("FlashAttention", "attention, gpu", "2023-01-02T03:04:05+00:00", None),
        ),
        ("weekly.rss", RSS, "https://example.com/weekly/1", ("第一期", "周报, mlsys", "2024-03-05T08:00:00+00:00", "MLSys 周报")),
        ("blog.xml", ATOM, "https://blog.example/a", ("Post A", "gpu", "2024-01-01T00:00:00+00:00", "Atom blog")),
        ("subscriptions.opml", OPML, "https://lilianweng.github.io/", ("Lil'Log", None, None, "ML")),
    ],
)
def test_each_export_is_read_with_what_it_says_of_a_link(cli, tmp_path, name, content, url, expected):
    links, _ = read(cli, tmp_path, name, content)
    link = by_url(links)[url]
    assert (link["title"], link["tags"], link["added"], link["section"]) == expected
    assert link["seed"] == name


@pytest.mark.parametrize(
    "name, content, said",
    [
        ("pocket.csv", POCKET_CSV, "pocket.csv: line 4 has no URL; skipped"),
        ("raindrop.csv", RAINDROP_CSV, "raindrop.csv: line 3 has no URL; skipped"),
        ("pinboard.json", json.dumps(PINBOARD), "pinboard.json: item 2 has no URL; skipped"),
        ("weekly.rss", RSS, "weekly.rss: line 5: an entry without a link; skipped"),
        ("broken.json", '[{"href": "https://a.example/"}, ', "broken.json: not JSON"),
        ("wrong.csv", "name,size\na,1\n", "wrong.csv: a CSV without a url column"),
        ("deep.json", "[" * 5000 + "]" * 5000, "deep.json: JSON that cannot be read (RecursionError"),
        ("big.json", '[{"href": "https://a.example/", "time": ' + "9" * 5000 + "}]", "big.json: JSON that cannot be read (ValueError"),
        (
            "cr.csv",
            "url,title\nhttps://a.example/,t\nhttps://b.example/,x\ry\nhttps://c.example/,t\n",
            "cr.csv: line 3: new-line character seen in unquoted field",
        ),
    ],
)
def test_bad_rows_are_reported_with_their_line_never_a_traceback(cli, tmp_path, name, content, said):
    (tmp_path / name).write_text(content, encoding="utf-8")
    result = cli("links", name, "--json")
    assert result.exit_code == 0 and said in result.stderr and "Traceback" not in result.output
    if name == "cr.csv":  # what came before it is kept
        assert [link["url"] for link in links_json(result)] == ["https://a.example/"]


def test_a_csv_field_past_the_csv_modules_limit_is_read_and_the_callers_limit_put_back():
    """The csv module refuses a field over 128 KiB (in the header, a traceback; in a row, the rest
    of the file went unread). It is read with a limit of its own, whatever the caller set."""
    import csv

    from mirror.seeds import imports

    rows = [f"https://e.example/{i}," + ("y" * 200_000 if i == 30 else "t") for i in range(40)]
    text = "url," + "x" * 200_000 + "\n" + "\n".join(rows) + "\n"
    one_pass = imports.parse_csv(text, "s.csv", warnings := [])
    assert [link.url for link in one_pass] == [f"https://e.example/{i}" for i in range(40)] and not warnings
    previous = csv.field_size_limit(10**7)  # a program that raised it for itself
    try:
        assert imports.parse_csv(text, "s.csv", warnings.append) == one_pass and not warnings
        assert csv.field_size_limit() == 10**7
    finally:
        csv.field_size_limit(previous)


def test_imported_links_are_recorded_with_their_tags_and_dates(cli, tmp_path):
    import sqlite_utils

    read(cli, tmp_path, "pinboard.json", json.dumps(PINBOARD))
    row = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")["links"].get(("pinboard.json", 1, 1))
    assert (row["tags"], row["added"]) == ("attention, gpu", "2023-01-02T03:04:05+00:00")
    (tmp_path / "pinboard.json").write_text(json.dumps([{**PINBOARD[0], "tags": "attention"}]), encoding="utf-8")
    assert cli("links", "pinboard.json").exit_code == 0  # a re-read updates what changed
    assert sqlite_utils.Database(tmp_path / "archive" / "mirror.db")["links"].get(("pinboard.json", 1, 1))["tags"] == "attention"


def test_a_gbk_feed_file_keeps_its_chinese(cli, tmp_path):
    feed = RSS.replace('encoding="UTF-8"', 'encoding="GBK"')
    (tmp_path / "gbk.rss").write_bytes(feed.encode("gbk"))
    result = cli("links", "gbk.rss", "--json")
    link = by_url(links_json(result))["https://example.com/weekly/1"]
    assert (link["title"], link["section"]) == ("第一期", "MLSys 周报")


def test_a_feed_url_given_to_fetch_is_read_as_a_feed(cli, tmp_path, web):
    from .webserver import article

    first = web.add("/posts/1", article("第一篇", "订阅源里的第一篇文章。"))
    web.add("/posts/2", article("第二篇", "订阅源里的第二篇文章。"))
    feed = (
        '<?xml version="1.0" encoding="GBK"?><rss version="2.0"><channel><title>博客</title>'
        f"<item><title>第一篇</title><link>{first}</link><category>系统</category></item>"
        "<item><title>第二篇</title><link>/posts/2</link></item></channel></rss>"
    ).encode("gbk")
    url = web.add("/feed", feed, content_type="application/rss+xml")  # no .xml in its address: read by what it is
    result = cli("fetch", url, "--delay", "0", "--retries", "0", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["feeds"]["entries"] == 2 and report["feeds"]["run"]["statuses"] == {"archived": 2}
    import sqlite_utils

    db = sqlite_utils.Database(tmp_path / "archive" / "mirror.db")
    rows = {row["url"]: row for row in db.query("select links.*, pages.status from links join pages using (url) where seed = ?", [url])}
    assert set(rows) == {first, web.url("/posts/2")}  # the relative link resolved against the feed
    assert (rows[first]["title"], rows[first]["tags"], rows[first]["section"]) == ("第一篇", "系统", "博客")
    assert all(row["status"] == "archived" for row in rows.values())
    assert db["pages"].get(url)["status"] is not None  # the feed itself is archived too
    again = cli("fetch", url, "--delay", "0")  # read from its saved copy; nothing fetched again
    assert again.exit_code == 0 and "2 entries in 1 feed given" in again.output


def test_a_page_given_as_a_url_is_not_a_feed(cli, tmp_path, web):
    from .webserver import article

    url = web.add("/page", article("普通文章", "提到 <rss> 的普通文章。"))
    result = cli("fetch", url, "--delay", "0")
    assert result.exit_code == 0 and "feed" not in result.output


def test_a_feeds_entries_get_no_header_of_the_user_and_no_more_private_address(cli, tmp_path, web, web2):
    """A feed is someone else's list: a token given with --header goes to the feed's host only,
    and an entry may not be at an address more private than the feed's own."""
    from .webserver import article

    entry = web2.add("/entry", article("别人的文章", "订阅源指向另一台主机上的文章。"))
    url = web.add(
        "/feed", f'<rss version="2.0"><channel><item><link>{entry}</link></item></channel></rss>'.encode(), content_type="application/rss+xml"
    )
    result = cli("fetch", url, "--delay", "0", "--retries", "0", "--header", "Authorization: Bearer MINE")
    assert result.exit_code == 0 and "1 entry in 1 feed given" in result.output
    assert web.recorder.headers["/feed"][0].get("Authorization") == "Bearer MINE"
    assert "Authorization" not in web2.recorder.headers["/entry"][0]


def test_dates_are_written_in_iso_whatever_digits_they_came_in():
    """A feed's date written with other scripts' digits is read as the standard library reads it:
    what is stored is ISO, in ASCII digits, or nothing."""
    from datetime import UTC, datetime

    from mirror.seeds.imports import when

    assert when("Tue, 05 Mar 2024 0\u0668:00:00 GMT") == "2024-03-05T08:00:00+00:00"
    assert when("Tue, 05 Mar 2024 08:00:00 GMT") == when("05 Mar 2024 08:00:00 UT") == "2024-03-05T08:00:00+00:00"
    assert when("1700000000") == when("\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660") == "2023-11-14T22:13:20+00:00"
    assert when("Sat, 29 Feb 2025 01:02:03 GMT") is None and when("Tue, 05 Mar 2024 24:00:00 GMT") is None
    for value in ("Tue, 05 Mar 2024 0\u0668:00:00 GMT", "Mon, \u0660\u0667 Jan 2024 01:02:03 GMT", "1700000000.5"):
        written = when(value)
        assert written is None or (written.isascii() and datetime.fromisoformat(written)), value
    for seconds in (0, 59, 60, 3599, 3600, 86399, 86400, 1_700_006_399, 99_999_999_999):  # each clock's digits from their parts
        expected = datetime.fromtimestamp(seconds, UTC).isoformat()
        assert when(str(seconds).rjust(9, "0")) == when(seconds if seconds >= 10**8 else str(seconds).rjust(9, "0")) == expected


def test_pockets_html_export_gives_each_links_title_tags_date_list_and_line():
    from mirror.seeds.html import parse_html

    links = parse_html(POCKET_EXPORT, "s")
    assert [(link.url_as_written, link.title, link.section, link.tags, link.added) for link in links] == [
        (
            "https://zhuanlan.zhihu.com/p/1?utm_source=pocket&x=1",
            "FlashAttention 详解 & 注释",
            "Unread",
            "mlsys, 注意力",
            "2023-11-14T22:13:20+00:00",
        ),
        ("https://example.com/search?q=a&b=2", 'Tom & Jerry\'s "notes" <3', "Unread", None, "2023-11-14T22:15:00+00:00"),
        ("https://example.com/empty", None, "Unread", None, None),
        ("https://example.com/read", "Read one", "Read Archive", "done", "2023-07-22T04:26:40+00:00"),
    ]
    assert [link.line for link in links] == [11, 12, 13, 19]


def test_a_long_html_export_keeps_each_links_own_line():
    """libxml2's HTML parser stops counting lines at 65,535; each link keeps its own line."""
    from mirror.seeds.html import parse_html

    rows = "".join(f'<li><a href="https://example.com/{i}" time_added="1700000000" tags="">{i}</a></li>\n' for i in range(70_000))
    links = parse_html("<!DOCTYPE html><html><body><h1>Unread</h1><ul>\n" + rows + "</ul></body></html>\n", "s")
    assert len(links) == 70_000
    assert [(link.line, link.col) for link in links[-2:]] == [(70_000, 1), (70_001, 1)]
    assert [link.line for link in links[65_530:65_536]] == list(range(65_532, 65_538))


@pytest.mark.hostile
@pytest.mark.parametrize(
    "text, titles",
    [
        ("<ul>" * 250 + '<li><a href="https://e.x/a" time_added="" tags="">T</a></li>', ["T"]),  # (libxml2 stops at 256 levels)
        ('<ul><li><a href="https://e.x/a" time_added="" tags="">' + "x" * 11_000_000 + "</a></li></ul>", [None]),  # (it drops a text of 10 MB)
        ("<!--a-->" * 60 + "<p>", []),
        ("<!DOCTYPE NETSCAPE-Bookmark-file-1>" + "<dt><a" * 200_000, []),  # (unclosed bookmarks: each read once)
        ("<!DOCTYPE NETSCAPE-Bookmark-file-1>" + "<dd>" * 100_000 + "x", []),
        ("<!--" * 100_000 + "<!DOCTYPE NETSCAPE-Bookmark-file-1>", []),
    ],
    ids=["nested", "huge-title", "comments", "unclosed-bookmarks", "unclosed-dd", "unclosed-comments"],
)
def test_a_hostile_html_export_is_read_in_bounded_time(text, titles):
    import time

    from mirror.seeds.html import parse_html

    started = time.monotonic()
    assert [link.title for link in parse_html(text, "s")] == titles
    assert time.monotonic() - started < 20


def test_a_feeds_entries_give_links_titles_tags_dates_lines_and_warnings():
    links, warnings = _feed(SERVICE_RSS)
    assert [(link.url_as_written, link.line, link.col, link.title, link.section, link.tags, link.added) for link in links] == [
        ("https://zhuanlan.zhihu.com/p/1?a=1&b=2", 9, 1, "FlashAttention 详解 & 注释", "My bookmarks", "mlsys, 注意力", "2024-03-05T08:00:00+00:00"),
        ("https://example.com/b", 19, 2, "Without a date — 😀", "My bookmarks", None, None),
        ("https://example.com/c", 29, 4, None, "My bookmarks", None, "2024-03-06T09:10:11+00:00"),
    ]
    assert warnings == ["s: line 25: an entry without a link; skipped"]
    links, _ = _feed(SERVICE_ATOM)
    assert [(link.url, link.tags, link.added) for link in links] == [
        ("https://blog.example/a", "gpu, text", "2023-12-01T00:00:00+00:00"),
        ("https://blog.example/b", None, "2024-01-02T00:00:00+00:00"),
    ]
    relative, _ = _feed(SERVICE_ATOM.replace("https://blog.example/b", "/b"), base="https://feed.example/x/")
    assert relative[1].url == "https://feed.example/b"


@pytest.mark.parametrize(
    "change",
    [
        ("&amp; 注释", "&nbsp; 注释"),  # an undeclared entity: libxml2 mends it
        ("</title>", "</titel>"),
        ("<dc:creator>someone</dc:creator>", "<dc:creator><name>someone</name></dc:creator>"),  # a child that holds elements
        ("</item>\n    <item>", "</item><!-- <item><link>https://commented.example/</link></item> -->\n    <item>"),
        ("<title>No link</title>", "<title><![CDATA[No link]]></title>"),
    ],
)
def test_a_feed_with_odd_or_mended_parts_gives_its_entries(change):
    links, warnings = _feed(SERVICE_RSS.replace(*change, 1))
    assert [link.url.split("?")[0] for link in links] == ["https://zhuanlan.zhihu.com/p/1", "https://example.com/b", "https://example.com/c"]
    assert [link.line for link in links] == [9, 19, 29] and warnings == ["s: line 25: an entry without a link; skipped"]


@pytest.mark.hostile
@pytest.mark.parametrize(
    "text",
    [
        "<rss><channel><item><link>&#x110000;</link></item></channel></rss>",  # (not a character)
        "<rss><channel><item><link>x</link><title>&#99999999999999999999;</title></item></channel></rss>",
        "<rss><channel><item><link>x</link><category>&#" + "1" * 5000 + ";</category></item></channel></rss>",  # (past int()'s digits)
        "<rss><channel><item><link>x</link>" + "<c/>" * 4000 + "</item></channel></rss>",  # (4,000 children)
        "<rss><channel>" + "".join(f"<item><link>x</link><c{i}/></item>" for i in range(300)) + "</channel></rss>",  # (300 shapes)
    ],
    ids=["past-unicode", "huge-number", "many-digits", "many-children", "many-shapes"],
)
def test_a_hostile_feed_is_read_without_a_traceback(text):
    links, _ = _feed(text)
    assert len(links) <= 300 and all(link.line == 1 for link in links)


def test_a_feed_past_65535_lines_keeps_each_entrys_own_line():
    """Past line 65,535 libxml2 guesses an element's line from the text in it; each entry keeps its own,
    however many times past it (a window of lines at a time)."""
    for blank in (70_000, 140_000):
        text = "<rss>" + "\n" * blank + "<item><title>\nT</title><link>https://example.com/x</link></item>\n<item><title>\nU</title></item></rss>"
        lines = [text.count("\n", 0, at) + 1 for at in (text.index("<item>"), text.rindex("<item>"))]  # (70,001 and 70,003)
        links, warnings = _feed(text)
        assert [link.line for link in links] == lines[:1] and warnings == [f"s: line {lines[1]}: an entry without a link; skipped"]


def test_comments_before_a_feeds_root_are_read_once():
    """(Each comment was tried as the end of any before it: 30 of them took minutes.)"""
    from mirror.seeds.imports import feed_kind

    assert feed_kind("<!--a-->" * 60 + "<x/>") is None
    assert feed_kind("<!-- a -->\n" * 60 + "<rss>") == "rss"
    assert feed_kind("<!--" * 100_000) is None
    assert feed_kind('<?xml version="1.0"?>\n<!-- x --><rdf:RDF xmlns:rdf="x">') == "rdf:rdf"
