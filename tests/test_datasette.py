"""The datasette side, through datasette's in-process client: plain `Datasette([db])`
loads our plugin from its entry point, exactly as `datasette archive/mirror.db` does."""

from __future__ import annotations

import re
import sqlite3
from urllib.parse import quote

import pytest
import sqlite_utils
from datasette.app import Datasette

from mirror.fetch import FetchOptions, run
from mirror.search import search
from mirror.seeds import read_seeds
from mirror.store import Archive

from .helpers import ds_get, extraction_pool
from .webserver import PNG

ARTICLE = """<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>显存优化实战</title>
<script>window.evil = 1</script><link rel="stylesheet" href="http://cdn.invalid/site.css">
<meta http-equiv="refresh" content="0; url=http://elsewhere.invalid/"></head>
<body onload="steal()"><article><h1>显存优化实战</h1>
<p>大模型训练时，显存往往是最紧张的资源。本文介绍激活重计算、混合精度和零冗余优化器三种办法。</p>
<p onclick="steal()">激活重计算用计算换显存：前向时不保存中间结果，反向时重新计算。<a href="javascript:steal()">点我</a></p>
<p><img src="/img/diagram.png" alt="分块示意图"></p>
<p><img src="http://images.invalid/not-archived.png" alt="外链图"></p>
<p>零冗余优化器把优化器状态、梯度和参数切分到各个数据并行进程上，进一步降低每张卡的显存占用。</p>
<iframe src="http://ads.invalid/"></iframe>
<script src="http://tracker.invalid/t.js"></script>
</article></body></html>"""


ENGLISH = """<html><head><title>FlashAttention explained</title></head><body><article><h1>FlashAttention explained</h1>
<p>FlashAttention computes exact attention with far fewer memory reads and writes by tiling the
computation so that blocks fit in fast on-chip memory; the softmax is computed block by block.</p>
<p>It is used for training large language models on long sequences, where memory is the limit.</p></article></body></html>"""


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory):
    from .webserver import HostileServer

    folder = tmp_path_factory.mktemp("ds")
    with HostileServer() as web:
        article = web.add("/zh", ARTICLE.encode())
        english = web.add("/en", ENGLISH.encode())
        web.add("/img/diagram.png", PNG, content_type="image/png")
        web.add("/images.invalid-stand-in", b"")
        seeds = folder / "seeds"
        seeds.mkdir()
        (seeds / "reading.md").write_text(
            f"# 显存\n- [显存优化实战]({article})\n\n# Attention\n- [FlashAttention]({english})\n"
            f"- [gone soon]({web.url('/etag')})\n- [missing]({web.url('/missing')})\n- [blocked]({web.url('/zhihu-403')})\n",
            encoding="utf-8",
        )
        with Archive(folder / "archive") as archive, archive.lock():
            archive.record_inventory(read_seeds([seeds], base=folder))
            run(archive, FetchOptions(delay=0, retries=0, workers=1), pool=extraction_pool())
            web.recorder.gone.add("/etag")
            run(archive, FetchOptions(delay=0, retries=0, workers=1, refresh=True), pool=extraction_pool())
    return folder / "archive"


@pytest.fixture(scope="module")
def ds(archive_dir):
    return Datasette([str(archive_dir / "mirror.db")])


def facet_results(data: dict) -> dict:
    """Facets by name: datasette 0.65 puts them in `facet_results`, 1.0 (with
    `_extra=facet_results`) under its `results`."""
    facets = data["facet_results"]
    return facets["results"] if "results" in facets and "timed_out" in facets else facets


def filtered_count(data: dict) -> int:
    """The filtered row count: datasette 0.65's `filtered_table_rows_count`, 1.0's `count`
    (with `_extra=count`)."""
    return data["filtered_table_rows_count"] if "filtered_table_rows_count" in data else data["count"]


def page_id(archive_dir, path_end):
    db = sqlite_utils.Database(archive_dir / "mirror.db")
    return next(db.query("select id from pages where url like ?", [f"%{path_end}"]))["id"]


def test_plugin_is_loaded_from_its_entry_point(ds):
    plugins = ds_get(ds, "/-/plugins.json").json()
    mirror = next(p for p in plugins if p["name"] == "mirror")
    assert {"prepare_connection", "get_metadata", "startup", "register_routes", "render_cell"} <= set(mirror["hooks"])
    assert mirror["templates"] is True


def test_home_and_table_pages_are_friendly(ds, archive_dir):
    home = ds_get(ds, "/")
    assert home.status_code == 200 and "mirror: your reading lists, archived" in home.text
    table = ds_get(ds, "/mirror/pages")
    assert table.status_code == 200
    assert "One row per page" in table.text
    assert 'name="_search"' in table.text  # datasette's own search box is on
    facets = facet_results(ds_get(ds, "/mirror/pages.json?_size=0&_extra=facet_results").json())
    assert {"host", "status", "seeds", "sections", "language"} <= set(facets)
    sections = {v["value"] for v in facets["sections"]["results"]}
    assert {"显存", "Attention"} <= sections
    reader = f"/-/mirror/page/{page_id(archive_dir, '/zh')}"
    assert f'href="{reader}"' in table.text  # titles open the reader view
    links = ds_get(ds, "/mirror/links.json?_shape=array").json()
    assert {(link["seed"], link["line"], link["section"]) for link in links} >= {("seeds/reading.md", 2, "显存")}


@pytest.mark.parametrize(
    "query", ["显", "存", "显存", "优化器", "激活重计算", "FlashAttention", "memory", "显存 FlashAttention", '"on-chip memory"', "NEAR (", ""]
)
def test_table_search_and_json_api_equal_mirror_search(ds, archive_dir, query):
    api = ds_get(ds, "/mirror/pages.json?_shape=array&_col=url&_search=" + quote(query)).json()
    db = sqlite_utils.Database(archive_dir / "mirror.db")
    expected = {h.url for h in search(db, query, limit=1000)}
    assert {row["url"] for row in api} == expected  # an empty query finds nothing in both


def test_chinese_one_and_two_character_search(ds, archive_dir):
    for query in ("显", "显存"):
        rows = ds_get(ds, "/mirror/pages.json?_shape=array&_search=" + quote(query)).json()
        assert {r["url"].rsplit("/", 1)[-1] for r in rows} == {"zh", "etag"}  # /etag's article mentions 显存 too
    assert ds_get(ds, "/mirror/pages.json?_shape=array&_search=" + quote("鲸")).json() == []


def test_search_page_links_hits_to_reader(ds, archive_dir):
    html = ds_get(ds, "/-/mirror/search?q=" + quote("显存")).text
    reader = f"/-/mirror/page/{page_id(archive_dir, '/zh')}"
    assert f'href="{reader}"' in html and "<mark>显存</mark>" in html
    data = ds_get(ds, "/-/mirror/search?_format=json&q=" + quote("显存")).json()
    assert [d["url"].rsplit("/", 1)[-1] for d in data] == ["zh", "etag"]  # title match ranks first
    empty = ds_get(ds, "/-/mirror/search")
    assert empty.status_code == 200 and 'name="q"' in empty.text


@pytest.mark.hostile
def test_the_reader_shows_the_article_with_its_provenance_and_archived_images(ds, archive_dir):
    response = ds_get(ds, f"/-/mirror/page/{page_id(archive_dir, '/zh')}")
    assert response.status_code == 200
    html = response.text
    assert "零冗余优化器把优化器状态" in html
    assert "seeds/reading.md, line 2" in html and "“显存”" in html
    assert "Capture history" in html and "snapshot" in html.lower()
    # images come from the archive, never from the network
    assert "/-/mirror/resource?url=" in html
    assert "images.invalid" not in html and "[image not archived: 外链图]" in html
    article = html.split('<article class="mirror-article">', 1)[1].split("</article>", 1)[0]
    assert "<script" not in article and "onclick" not in article and "javascript:" not in article
    assert "iframe" not in article
    assert "default-src 'self'" in response.headers["content-security-policy"]


def test_archived_image_is_served_from_the_warc(ds, archive_dir):
    html = ds_get(ds, f"/-/mirror/page/{page_id(archive_dir, '/zh')}").text
    src = re.search(r'src="(/-/mirror/resource\?url=[^"]+)"', html)[1].replace("&amp;", "&")
    image = ds_get(ds, src)
    assert image.status_code == 200 and image.headers["content-type"] == "image/png" and image.content == PNG
    assert ds_get(ds, "/-/mirror/resource?url=" + quote("http://nowhere.invalid/x.png")).status_code == 404


@pytest.mark.hostile
def test_snapshot_is_sandboxed_and_defused(ds, archive_dir):
    response = ds_get(ds, f"/-/mirror/snapshot/{page_id(archive_dir, '/zh')}")
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    assert csp.startswith("sandbox") and "default-src 'none'" in csp and "script-src" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    html = response.text
    assert "零冗余优化器" in html
    assert "<script" not in html.lower() and "window.evil" not in html
    assert "onload" not in html and "onclick" not in html and "javascript:" not in html
    assert "http-equiv" not in html.lower() and "<iframe" not in html
    assert "cdn.invalid" not in html and "tracker.invalid" not in html and "images.invalid" not in html
    assert "/-/mirror/resource?url=" in html  # the captured image is shown


def test_link_rot_and_failures_views(ds):
    rot = ds_get(ds, "/mirror/link_rot.json?_shape=array").json()
    assert [r["url"].rsplit("/", 1)[-1] for r in rot] == ["etag"] and rot[0]["gone_since"]
    failures = {r["reason"]: r for r in ds_get(ds, "/mirror/failures.json?_shape=array").json()}
    assert set(failures) == {"http_404", "blocked"}
    assert "--cookies" in failures["blocked"]["example"]
    assert ds_get(ds, "/mirror/link_rot").status_code == 200 and ds_get(ds, "/mirror/failures").status_code == 200


def test_unknown_page_is_a_404_page(ds):
    response = ds_get(ds, "/-/mirror/page/99999")
    assert response.status_code == 404 and "no page 99999" in response.text
    assert ds_get(ds, "/-/mirror/snapshot/99999").status_code == 404


def test_users_own_metadata_and_table_options_win(archive_dir):
    own = Datasette(
        [str(archive_dir / "mirror.db")],
        metadata={"databases": {"mirror": {"tables": {"pages": {"title": "My own pages", "facets": ["status"]}}}}},
    )
    table = ds_get(own, "/mirror/pages")
    assert "My own pages" in table.text and "One row per page" in table.text  # ours fills what the user left out
    facets = facet_results(ds_get(own, "/mirror/pages.json?_size=0&_extra=facet_results").json())
    assert set(facets) == {"status"}
    assert 'name="_search"' in table.text  # our fts_table still applies


def test_hidden_tables_and_label_column(ds):
    tables = ds_get(ds, "/mirror.json").json()["tables"]
    hidden = {t["name"] for t in tables if t["hidden"]}
    assert "warc_files" in hidden and "pages" not in hidden


def test_home_is_the_reading_list(ds, archive_dir):
    html = ds_get(ds, "/").text
    reader = f"/-/mirror/page/{page_id(archive_dir, '/zh')}"
    lists = html.split("Reading lists", 1)[1]
    # seed -> section -> links, in the order they were written
    assert lists.index("<h2>seeds/reading.md") < lists.index("<h3>显存</h3>") < lists.index("显存优化实战") < lists.index("<h3>Attention</h3>")
    assert f'href="{reader}"' in html
    assert "http_404" in html and "blocked" in html and "--cookies" in html  # failed, with the reason
    assert "Recently archived" in html and 'class="count-archived"' in html
    assert 'href="/mirror"' in html  # datasette's table list, one click away
    assert ds_get(ds, "/?seed=" + quote("seeds/reading.md")).text.count('class="link ') == 5
    assert ds_get(ds, "/?page=2").text.count('class="link ') == 0


@pytest.mark.hostile
def test_home_escapes_hostile_seeds(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "evil.md").write_text(
        "# <script>alert('section')</script>\n"
        "- [<img src=x onerror=alert(1)>](javascript:alert(1))\n"
        '- [<b>bold</b>](http://127.0.0.1:9/"><script>alert(2)</script>)\n',
        encoding="utf-8",
    )
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(read_seeds([seeds], base=tmp_path))
    html = ds_get(Datasette([str(tmp_path / "archive" / "mirror.db")]), "/").text
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    assert "<h3>&lt;script&gt;alert(&#39;section&#39;)" in html
    assert 'href="javascript:' not in html
    assert "pending" in html and "skipped" in html


def test_table_search_json_is_filtered_with_count_and_facets(ds, archive_dir):
    """datasette's own table view, its `_search` read by our `escape_fts`: exactly the pages
    `mirror search` finds (in the table's order), counted, faceted and paged."""
    db = sqlite_utils.Database(archive_dir / "mirror.db")
    for query in ("显存", "memory", "显"):
        found = {h.url for h in search(db, query, limit=100)}
        rows = ds_get(ds, "/mirror/pages.json?_shape=array&_search=" + quote(query)).json()
        assert {r["url"] for r in rows} == found and len(rows) == len(found)
    data = ds_get(ds, "/mirror/pages.json?_shape=objects&_extra=count&_size=1&_search=" + quote("显存")).json()
    assert filtered_count(data) == 2 and len(data["rows"]) == 1 and data["next"]
    facets = facet_results(ds_get(ds, "/mirror/pages.json?_size=0&_extra=facet_results&_search=" + quote("显存")).json())
    assert {v["value"]: v["count"] for v in facets["status"]["results"]} == {"archived": 2}
    second = ds_get(ds, data["next_url"].split("localhost", 1)[-1]).json()
    assert {r["url"] for r in data["rows"] + second["rows"]} == {h.url for h in search(db, "显存")}
    assert len(ds_get(ds, "/mirror/pages.json?_shape=array&_size=max&_search=" + quote("显")).json()) == 2
    assert ds_get(ds, "/mirror/pages.json?_size=lots&_search=" + quote("显")).status_code == 400
    only = ds_get(ds, "/mirror/pages.json?_shape=array&sections__arraycontains=" + quote("Attention") + "&_search=" + quote("显存")).json()
    assert [r["url"].rsplit("/", 1)[-1] for r in only] == ["etag"]
    assert ds_get(ds, "/mirror/pages.json?_shape=array&_search=").json() == []  # an empty search finds nothing, never every page


def test_table_search_json_counts_every_match_past_the_ranked(ds, archive_dir, monkeypatch):
    """A word in most articles: `mirror search` ranks the newest RANKED_AT_MOST; the table's JSON
    is a filter, every match counted and listed."""
    from mirror.search import query as search_query

    monkeypatch.setattr(search_query, "RANKED_AT_MOST", 1)
    data = ds_get(ds, "/mirror/pages.json?_shape=objects&_extra=count&_search=" + quote("显")).json()
    assert filtered_count(data) == 2 and len(data["rows"]) == 2


def test_a_table_search_as_the_first_request_goes_to_the_search_page(archive_dir):
    fresh = Datasette([str(archive_dir / "mirror.db")])
    response = ds_get(fresh, "/mirror/pages?_search=" + quote("显存"))
    assert response.status_code == 302 and response.headers["location"] == "/-/mirror/search?q=" + quote("显存")
    page = ds_get(fresh, response.headers["location"])
    assert page.status_code == 200 and "<mark>显存</mark>" in page.text


def test_table_search_page_is_the_ranked_search_and_keeps_the_table_view_a_click_away(ds, archive_dir):
    response = ds_get(ds, "/mirror/pages?_search=" + quote("显存"))
    assert response.status_code == 302
    assert (
        ds_get(ds, "/mirror/pages?_sort=url&_search=" + quote("显存")).headers["location"] == response.headers["location"]
    )  # what datasette's own form sends
    html = ds_get(ds, response.headers["location"]).text
    first = re.search(r'<a class="reader-link" href="(/-/mirror/page/\d+)">', html)[1]
    assert first == f"/-/mirror/page/{page_id(archive_dir, '/zh')}"  # ranked: the title's match first
    assert "_sort=title" in html and "_search=" in html  # the table view, a click away
    unranked = ds_get(ds, "/mirror/pages?_sort=title&_search=" + quote("显存"))
    assert unranked.status_code == 200 and "rows-and-columns" in unranked.text and "/zh" in unranked.text
    filtered = ds_get(ds, "/mirror/pages?status=archived&_search=" + quote("显存"))
    assert filtered.status_code == 200 and "2 rows" in filtered.text  # a filter of the user's: the table view, filtered
    hostile = ds_get(ds, "/mirror/pages?_search=" + quote("<script>alert(1)</script>"))
    assert "<script>alert(1)" not in ds_get(ds, hostile.headers["location"]).text


def test_table_search_json_pages_through_every_match_once(tmp_path):
    from mirror._types import Extraction
    from mirror.seeds import links_from_urls

    urls = [f"https://example.com/p{i}" for i in range(7)]
    with Archive(tmp_path / "archive") as archive:
        archive.record_inventory(links_from_urls(urls))
        for url in urls:
            archive.save_extraction(url, Extraction(status="archived", kind="html", title="显", text=f"显 {url}"))
    fresh = Datasette([str(tmp_path / "archive" / "mirror.db")])
    seen, path = [], "/mirror/pages.json?_shape=objects&_size=2&_search=" + quote("显")
    while path:
        data = ds_get(fresh, path).json()
        seen += [row["url"] for row in data["rows"]]
        path = data["next_url"].split("localhost", 1)[-1] if data["next_url"] else None
    counted = ds_get(fresh, "/mirror/pages.json?_extra=count&_search=" + quote("显")).json()
    assert sorted(seen) == sorted(urls) and len(seen) == len(set(seen)) == filtered_count(counted)


def test_the_homes_counts_follow_every_write(tmp_path):
    """The home's counts (a walk over every page and link: 165 ms at a million) are kept until
    the archive is written; a write shows at once."""
    from mirror._types import Extraction
    from mirror.seeds import links_from_urls

    folder = tmp_path / "archive"
    with Archive(folder) as archive:
        archive.record_inventory(links_from_urls(["https://example.com/a", "https://example.com/b"]))
    fresh = Datasette([str(folder / "mirror.db")])

    def counts() -> str:
        return re.search(r'<p class="mirror-counts">.*?</p>', ds_get(fresh, "/").text, re.S)[0]

    assert "pending 2" in counts() and "archived 0" in counts()
    for url, archived in (("https://example.com/a", 1), ("https://example.com/b", 2)):
        with Archive(folder) as archive:
            archive.save_extraction(url, Extraction(status="archived", kind="html", title="文", text="一篇文章"))
        assert f"archived {archived}" in counts() and f"pending {2 - archived}" in counts()


@pytest.mark.hostile
@pytest.mark.parametrize(
    "path",
    [
        "/?page=99999999999999999999",
        "/mirror/pages?_search=hostile&_next=99999999999999999999",
        "/mirror/pages.json?_search=hostile&_next=99999999999999999999",
    ],
)
def test_huge_paging_numbers_are_not_a_500(hostile_ds, path):
    assert ds_get(hostile_ds, path).status_code == 200


@pytest.mark.hostile
def test_size_zero_never_gives_a_next_page_that_does_not_advance(hostile_ds):
    data = ds_get(hostile_ds, "/mirror/pages.json?_search=hostile&_size=0").json()
    assert data["rows"] or data.get("next") is None  # (no page of nothing that points at itself)


@pytest.mark.hostile
def test_bad_json_in_a_hand_edited_row_does_not_break_table_search(tmp_path, hostile_archive):
    """The table's search goes to the search page, which reads no JSON column; datasette's own
    table view (JSON) facets `seeds` as an array: there malformed JSON is its clear 400, as on the
    table without a search (datasette 1.0: a 500 of its own), and without facets the rows come."""
    copy = tmp_path / "mirror.db"
    with sqlite3.connect(hostile_archive / "mirror.db") as source, sqlite3.connect(copy) as target:
        source.backup(target)
    sqlite_utils.Database(copy).execute("update pages set seeds = 'not json', sections = '{\"a\": 1}'")
    edited = Datasette([str(copy)])
    page = ds_get(edited, ds_get(edited, "/mirror/pages?_search=hostile").headers["location"])
    assert page.status_code == 200 and "reader-link" in page.text
    faceted = ds_get(edited, "/mirror/pages.json?_extra=facet_results&_search=hostile")
    assert faceted.status_code in (400, 500) and "malformed JSON" in faceted.text
    assert ds_get(edited, "/mirror/pages.json?_search=hostile&_nofacet=1").json()["rows"]
