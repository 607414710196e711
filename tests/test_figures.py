"""The images an article shows: in its Markdown at their place, with captions, fetched and
archived, shown by the reader and the snapshot; never a placeholder, an avatar or a pixel.

The markup is shaped like the sites of the first user's reading lists (zhihu, WeChat, CSDN,
cnblogs, juejin), WordPress, Medium and Wikipedia, and the corpus's fragments are read too."""

from __future__ import annotations

import asyncio
import re

import pytest
import sqlite_utils

from mirror.extract import extract
from mirror.extract.images import image_source, parse_srcset

from .helpers import CORPUS, corpus_or_skip, fetch
from .webserver import PNG

ZH = "<p>" + "流水线并行把模型按层切成几段，每段放在一张卡上，微批次依次流过各段，气泡越小利用率越高。" * 3 + "</p>"


EN = "<p>" + "Pipeline parallelism splits a model into stages, one per device, and streams micro-batches through them. " * 3 + "</p>"


SPACER = "data:image/svg+xml;utf8,&lt;svg xmlns=&#39;http://www.w3.org/2000/svg&#39; width=&#39;1080&#39; height=&#39;608&#39;&gt;&lt;/svg&gt;"


GIF = "data:image/gif;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVQImWNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg=="


def page(article: str, lang: str = "zh") -> str:
    """An article page with what is not the article around it: a header with the site's logo
    and the author's avatar, a tracking pixel, related posts with thumbnails, a footer."""
    return f"""<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>Pipeline parallelism</title></head><body>
<header class="AppHeader"><a href="/"><img class="AppHeader-logo" src="/img/logo.png" alt="site"></a>
<div class="AuthorInfo"><img class="Avatar AuthorInfo-avatar" src="/img/avatar.jpg" alt="author"><span>某作者</span></div></header>
<img src="/img/pixel.gif" width="1" height="1" alt="">
<article><h1>Pipeline parallelism</h1>{article}</article>
<aside class="related-posts"><h3>Related</h3><ul><li><a href="/p/2"><img src="/img/related-1.jpg" alt=""></a><a href="/p/2">Another\
 post</a></li></ul></aside>
<footer><img src="/img/footer-badge.png" alt=""></footer></body></html>"""


# name: (article markup, the image paths the article shows in order, captions)
SITES = {
    "zhihu": (
        ZH
        + f"""<figure data-size="normal"><noscript><img src="/img/v2-aaa_b.jpg" data-caption="" data-size="normal"
 data-rawwidth="1080" data-rawheight="608" class="origin_image zh-lightbox-thumb" width="1080" data-original="/img/v2-aaa_r.jpg"/></noscript>
<img src="{SPACER}" data-caption="" data-size="normal" data-rawwidth="1080" data-rawheight="608" class="origin_image zh-lightbox-thumb lazy"
 width="1080" data-original="/img/v2-aaa_r.jpg" data-actualsrc="/img/v2-aaa_b.jpg"/><figcaption>图1：一条四段的流水线</figcaption></figure>"""
        + ZH
        + f"""<figure data-size="normal"><noscript><img src="/img/v2-bbb_b.jpg" class="content_image" width="225"/></noscript>
<img src="{SPACER}" class="content_image lazy" width="225" data-actualsrc="/img/v2-bbb_b.jpg"/></figure>"""
        + ZH,
        ["/img/v2-aaa_b.jpg", "/img/v2-bbb_b.jpg"],
        ["图1：一条四段的流水线"],
    ),
    "wordpress": (
        EN
        + """<figure class="wp-block-image size-large"><img decoding="async" width="1024" height="576"
 src="/img/stages-1024x576.png" alt="Four stages" class="wp-image-41" srcset="/img/stages-1024x576.png 1024w,
 /img/stages-300x169.png 300w, /img/stages-768x432.png 768w, /img/stages.png 1920w" sizes="(max-width: 1024px) 100vw, 1024px" />
<figcaption class="wp-element-caption">Four stages, eight micro-batches</figcaption></figure>"""
        + EN
        + """<figure class="wp-block-image"><a href="/img/bubble.png"><img src="/img/bubble-800x400.png" alt="The bubble"
 srcset="/img/bubble-800x400.png 800w, /img/bubble-300x150.png 300w"/></a></figure>"""
        + EN,
        ["/img/stages-1024x576.png", "/img/bubble-800x400.png"],
        ["Four stages, eight micro-batches"],
    ),
    "medium": (
        EN
        + """<figure class="mt mu paragraph-image"><div role="button" tabindex="0" class="mz na"><span class="fk"><picture>
<source srcset="/img/resize:fit:640/format:webp/1*aaa.png 640w, /img/resize:fit:1100/format:webp/1*aaa.png 1100w,\
 /img/resize:fit:1400/format:webp/1*aaa.png 1400w"
 sizes="(min-resolution: 4dppx) and (max-width: 700px) 50vw, 700px" type="image/webp"/>
<source data-testid="og" srcset="/img/resize:fit:640/1*aaa.png 640w, /img/resize:fit:1400/1*aaa.png 1400w" sizes="700px"/>
<img alt="Throughput by batch size" class="bh ls nd" width="700" height="394" loading="eager" role="presentation"/></picture></span></div>
<figcaption class="ne fg nf" data-selectable-paragraph="">Throughput by batch size</figcaption></figure>"""
        + EN
        + """<figure class="paragraph-image"><picture><source type="image/jxl" srcset="/img/1*bbb.jxl"/>
<source media="(max-width: 600px)" srcset="/img/resize:fit:600/1*bbb.png"/><img alt="" src="/img/resize:fit:700/1*bbb.png"\
 width="700"/></picture></figure>"""
        + EN,
        ["/img/resize:fit:1400/format:webp/1*aaa.png", "/img/resize:fit:700/1*bbb.png"],
        ["Throughput by batch size"],
    ),
    "wechat": (
        f"""<div class="rich_media_content" id="js_content" style="visibility: hidden;">{ZH}
<section style="text-align: center;"><img class="rich_pages wxw-img" data-ratio="0.5625" data-src="/img/mmbiz_png/abc/640?wx_fmt=png"
 data-type="png" data-w="1080" src="{GIF}" style="width: 100%;"></section>{ZH}
<section><span><img class="rich_pages" data-src="/img/mmbiz_jpg/def/640?wx_fmt=jpeg" src="{GIF}"></span></section>{ZH}</div>
<div id="js_pc_qr_code" class="qr_code_pc_outer"><img id="js_pc_qr_code_img" class="qr_code_pc_img" src="/img/qrcode?scene=10000004"></div>
<div class="like_comment_wrp" style="display: none;"><p><img src="/img/pic_like_comment.png"></p></div>""",
        ["/img/mmbiz_png/abc/640?wx_fmt=png", "/img/mmbiz_jpg/def/640?wx_fmt=jpeg"],
        [],
    ),
    "csdn": (
        f"""<div id="content_views" class="markdown_views prism-atom-one-dark">{ZH}<p><img src="/img/20210101.png" alt="在这里插入图片描述"></p>{ZH}
<p><img src="/img/20210102.png" alt="流水线示意"> 如图所示，每段之间只传激活。</p>{ZH}</div>""",
        ["/img/20210101.png", "/img/20210102.png"],
        [],
    ),
    "cnblogs": (
        f"""<div id="cnblogs_post_body" class="blogpost-body cnblogs-markdown">{ZH}
<p><img src="/img/loading.gif" data-src="/img/cnblogs-1.png" class="lazyload" alt=""></p>{ZH}
<p><img src="/img/cnblogs-2.png" alt="" loading="lazy"></p>{ZH}</div>""",
        ["/img/cnblogs-1.png", "/img/cnblogs-2.png"],
        [],
    ),
    "juejin": (
        f"""<div class="markdown-body cache">{ZH}<p><img src="/img/tos-cn-i-k3u1fbpfcp/abc~tplv-k3u1fbpfcp-zoom-in-crop-mark:1512:0:0:0.awebp"
 alt="" loading="lazy" class="medium-zoom-image"></p>{ZH}<p><img src="/img/tos-cn-i-k3u1fbpfcp/def~tplv-k3u1fbpfcp-watermark.awebp"\
 alt="显存占用"></p>{ZH}</div>""",
        [
            "/img/tos-cn-i-k3u1fbpfcp/abc~tplv-k3u1fbpfcp-zoom-in-crop-mark:1512:0:0:0.awebp",
            "/img/tos-cn-i-k3u1fbpfcp/def~tplv-k3u1fbpfcp-watermark.awebp",
        ],
        [],
    ),
    "lazy-plugin": (  # a WordPress lazy-loading plugin: data-lazy-src with a <noscript> copy beside it
        EN
        + f"""<p><img src="{SPACER}" data-lazy-src="/img/lazy-1.png" data-lazy-srcset="/img/lazy-1.png 1200w, /img/lazy-1-600.png 600w"
 class="lazyload" alt="First"><noscript><img src="/img/lazy-1.png" alt="First"></noscript></p>"""
        + EN
        + """<div class="wp-caption aligncenter"><a href="/img/lazy-2-full.png"><img src="/img/lazy-2.png" alt="Second" width="640" height="360"></a>
<p class="wp-caption-text">The second one</p></div>"""
        + EN,
        ["/img/lazy-1.png", "/img/lazy-2.png"],
        ["The second one"],
    ),
    "wikipedia": (
        EN
        + """<div class="thumb tright"><div class="thumbinner" style="width:222px;"><a href="/wiki/File:Pipe.png" class="image">
<img alt="" src="/img/220px-Pipe.png" decoding="async" width="220" height="147" class="thumbimage"
 srcset="/img/330px-Pipe.png 1.5x, /img/440px-Pipe.png 2x" /></a><div class="thumbcaption"><div class="magnify">
<a href="/wiki/File:Pipe.png" class="internal" title="Enlarge"></a></div>A pipeline of <a href="/wiki/GPU">GPUs</a></div></div></div>"""
        + EN
        + """<ul class="gallery"><li><img src="/img/gallery-1.png" alt="One"></li><li><img src="/img/gallery-2.png" alt="Two"></li></ul>"""
        + EN,
        ["/img/440px-Pipe.png", "/img/gallery-1.png", "/img/gallery-2.png"],
        ["A pipeline of GPUs"],
    ),
    "news-lead": (  # the lead figure in the article's <header>, which trafilatura leaves out with the header
        """<header class="article-header"><h2 class="kicker">Systems</h2><figure class="lead-media"><img src="/img/lead-1050.jpg"
 srcset="/img/lead-600.jpg 600w, /img/lead-1050.jpg 1050w, /img/lead-2048.jpg 2048w" alt="A rack of accelerators">
<figcaption><span class="caption">A rack of accelerators.</span><span class="credit">Photo: someone</span></figcaption></figure>
<p class="byline">By A. Writer</p></header><div class="article-body"><div class="newsletter"><p>Sign up for our newsletter</p></div>"""
        + EN
        + EN
        + "</div>",
        ["/img/lead-1050.jpg"],
        ["A rack of accelerators. Photo: someone"],
    ),
}


NOT_ARTICLE = ["logo.png", "avatar.jpg", "pixel.gif", "related-1.jpg", "footer-badge.png", "qrcode", "pic_like_comment.png"]


def markdown_images(markdown: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(<?([^)>\s]+)>?\)", markdown)


def serve_sites(web) -> dict[str, str]:
    urls = {}
    for site, (article, expected, _) in SITES.items():
        urls[site] = web.add(f"/{site}", page(article).encode())
        for path in expected:
            web.add(path.split("?")[0], PNG, content_type="image/png")  # the server routes by path
    for name in ("logo.png", "avatar.jpg", "pixel.gif", "related-1.jpg", "footer-badge.png"):
        web.add(f"/img/{name}", PNG, content_type="image/png")
    return urls


@pytest.fixture
def reader(tmp_path, web):
    """A zhihu-shaped article whose second figure's image is gone (404), in datasette."""
    from datasette.app import Datasette

    article, expected, _ = SITES["zhihu"]
    article = article.replace(
        '<figure data-size="normal"><noscript><img src="/img/v2-bbb_b.jpg"',
        '<figure data-size="normal"><figcaption>图2：已删除的图</figcaption><noscript><img src="/img/v2-bbb_b.jpg"',
    )
    url = web.add("/zhihu", page(article).encode())
    web.add(expected[0], PNG, content_type="image/png")  # the second one is a 404
    db, _ = fetch(tmp_path, [url])
    page_id = db["pages"].get(url)["id"]
    return Datasette([str(tmp_path / "archive" / "mirror.db")]), page_id, web


LONG = "<p>" + "This is a long paragraph of real article text that goes on and on. " * 6 + "</p>"


@pytest.mark.parametrize("site", sorted(SITES))
def test_every_article_image_is_in_the_markdown_in_order_with_its_caption(site):
    article, expected, captions = SITES[site]
    base = "https://blog.example"
    result = extract(
        page(article, "en" if site in ("wordpress", "medium", "lazy-plugin", "wikipedia", "news-lead") else "zh").encode(),
        f"{base}/post/1",
        "text/html",
    )
    assert result.status == "archived"
    wanted = [base + path for path in expected]
    assert markdown_images(result.markdown) == wanted  # each once, in order, the chosen candidate
    assert result.images == wanted
    assert "data:" not in result.markdown
    for name in NOT_ARTICLE:
        assert name not in result.markdown
    for caption in captions:
        # the caption follows its image, in italics; captions are not the article's prose
        assert re.search(rf"\]\([^)]+\)\s*\n\n\*{re.escape(caption)}\*", result.markdown), result.markdown
        assert caption not in result.text
    assert "\U0001d306" not in result.markdown + result.text and "\U0001d308" not in result.markdown + result.text


def test_lazy_figures_a_script_fills_and_base_href():
    """A <figure> whose picture a script inserts names it in an attribute (NYT's itemid);
    relative sources resolve against <base href>, as the browser resolves them."""
    article = (
        EN
        + '<figure class="media" itemid="https://static.example/images/lead-articleLarge.jpg" role="group"><figcaption>The lead</figcaption></figure>'
        + EN
    )
    article += '<p><img src="diagram.png" alt="d"></p>' + EN
    html = page(article, "en").replace("<head>", '<head><base href="https://cdn.example/assets/">')
    result = extract(html.encode(), "https://news.example/2024/story.html", "text/html")
    assert result.images == ["https://static.example/images/lead-articleLarge.jpg", "https://cdn.example/assets/diagram.png"]


def test_srcset_and_picture_choose_one_sensible_candidate():
    import lxml.html

    # URLs with commas stay whole; descriptors are read
    assert parse_srcset("https://res.cloudinary.com/x/w_300,h_200/a.jpg 300w, b.jpg 2x,c.jpg") == [
        ("https://res.cloudinary.com/x/w_300,h_200/a.jpg", 300.0, "w"),
        ("b.jpg", 2.0, "x"),
        ("c.jpg", None, None),
    ]
    assert parse_srcset("data:image/gif;base64,AAAA 1x, real.png 2x") == [("real.png", 2.0, "x")]

    def chosen(markup: str) -> str | None:
        return image_source(lxml.html.fromstring(f"<div>{markup}</div>").find(".//img"))

    assert chosen('<img src="s.png" srcset="a.png 300w, b.png 1024w, c.png 2048w">') == "b.png"  # widest up to 1400
    assert chosen('<img srcset="big.png 3000w, bigger.png 4000w">') == "big.png"  # else the narrowest
    assert chosen('<img src="1x.png" srcset="2x.png 2x, 3x.png 3x">') == "2x.png"
    assert chosen('<img src="data:image/gif;base64,R0lG" data-src="real.png">') == "real.png"
    assert chosen('<img src="x.png" data-src=\'{"default":{"src":"y.png"}}\'>') == "x.png"  # JSON is not a URL
    assert chosen('<img src="data:image/svg+xml,%3Csvg%3E">') is None
    assert (
        chosen(
            '<picture><source type="image/jxl" srcset="a.jxl"><source media="(max-width: 600px)" srcset="small.png">'
            '<source media="(min-width: 601px)" srcset="wide.webp 1x, wide2.webp 2x"><img src="fallback.png"></picture>'
        )
        == "wide2.webp"
    )


def test_inline_code_with_a_line_break_does_not_swallow_the_images_after_it():
    """trafilatura writes inline code holding a line break as a fence; in a sentence the
    fence never closes where it should and hides the rest of the article (a WeChat page)."""
    article = ZH + "<p>排版难的问题被 <code>Markdown\n        Nice</code> 解决了！" + "这是一段很长的正文。" * 10 + "</p>"
    article += '<p><img data-src="/img/after.png" src="' + GIF + '"></p>' + ZH
    result = extract(page(article).encode(), "https://mp.weixin.qq.com/s/x", "text/html")
    assert "`Markdown Nice`" in result.markdown and "```" not in result.markdown
    assert markdown_images(result.markdown) == ["https://mp.weixin.qq.com/img/after.png"]


@pytest.mark.parametrize(
    "name", ["zhihu/paper1-zhihu", "zhihu/paper3-zhihu", "juejin/paper1-juejin", "csdn/paper2-csdn", "wechat/paper1-wechat", "wechat/paper4-wechat"]
)
def test_corpus_fragments_show_every_image_of_their_markdown(name):
    """sitdown-zh's article bodies, each in a page, against the images of their Markdown
    (zhihu's formula images aside: that Markdown writes formulas as TeX)."""
    source = CORPUS / "sitdown-zh" / f"{name}.html"
    corpus_or_skip(source)
    body = b"<!doctype html><html><head><meta charset=utf-8></head><body>%s</body></html>" % source.read_bytes()
    truth = markdown_images(source.with_suffix(".md").read_text(encoding="utf-8"))
    shown = [u for u in markdown_images(extract(body, "https://zhuanlan.zhihu.com/p/1", "text/html").markdown) if "equation?tex=" not in u]
    assert shown == truth


def test_every_article_image_is_fetched_and_archived_and_nothing_else(tmp_path, web):
    urls = serve_sites(web)
    db, _ = fetch(tmp_path, list(urls.values()))
    for site, (_, expected, _) in SITES.items():
        row = db["pages"].get(urls[site])
        assert row["status"] == "archived", site
        archived = {r["url"] for r in db.query("select url from resources where page_url = ? and status = 'archived'", [urls[site]])}
        assert archived == {web.url(path) for path in expected}, site
    requested = web.recorder.hits
    for path in (p for _, expected, _ in SITES.values() for p in expected):
        assert requested[path.split("?")[0]] == 1, path  # asked for once
    for name in NOT_ARTICLE:
        assert requested.get(f"/img/{name}", 0) == 0, name


def test_reindex_brings_an_old_archive_up_to_date_and_the_next_fetch_says_so(tmp_path, web, cli):
    """An archive whose articles were extracted before figures were read: reindex writes
    them anew, and the next fetch fetches the images they now show (and says so)."""
    urls = serve_sites(web)
    archive = tmp_path / "archive"
    fetch(tmp_path, [urls["zhihu"], urls["medium"]], images=False)
    db = sqlite_utils.Database(archive / "mirror.db")
    from mirror.store.queries import with_markdown
    from mirror.store.schema import compress_markdown

    for url, text in db.execute("select url, text from pages").fetchall():  # as an older mirror stored them
        db.execute("update pages set markdown_z = ?, images = null where url = ?", [compress_markdown(text), url])
    db.conn.commit()
    result = cli("reindex", "--archive", str(archive))
    assert result.exit_code == 0, result.output
    assert "2 articles now show images not archived yet" in result.output
    zhihu = with_markdown(db["pages"].get(urls["zhihu"]))
    assert markdown_images(zhihu["markdown"]) == [web.url(p) for p in SITES["zhihu"][1]]
    result = cli("fetch", "--archive", str(archive), urls["zhihu"], "--delay", "0", "--browser", "never", "--all-pending")
    assert result.exit_code == 0, result.output
    assert "fetching the images of 2 articles archived before" in result.output
    assert "0 of 0 pages" not in result.output  # no empty table
    archived = {r["url"] for r in db.query("select url from resources where status = 'archived'")}
    assert {web.url(p) for site in ("zhihu", "medium") for p in SITES[site][1]} <= archived
    result = cli("reindex", "--archive", str(archive))
    assert "images not archived yet" not in result.output  # nothing left to fetch


def test_reader_shows_archived_figures_from_the_archive_and_the_rest_as_a_note_with_caption(reader):
    ds, page_id, _ = reader
    html = asyncio.run(ds.client.get(f"/-/mirror/page/{page_id}")).text
    article = html.split('<article class="mirror-article">', 1)[1].split("</article>", 1)[0]
    assert re.search(r'<img src="/-/mirror/resource\?url=[^"]*v2-aaa_b\.jpg[^"]*"[^>]*>\s*</p>\s*<p><em>图1：一条四段的流水线</em>', article), article
    assert re.search(r"\[image not archived\]</span>\s*</p>\s*<p><em>图2：已删除的图</em>", article), article
    assert not re.search(r'src="https?:', article)  # nothing loads from the web


def test_snapshot_shows_each_figure_once_from_the_archive(reader):
    ds, page_id, _ = reader
    html = asyncio.run(ds.client.get(f"/-/mirror/snapshot/{page_id}")).text
    images = re.findall(r"<img\b[^>]*>", html.split("<article>", 1)[1].split("</article>", 1)[0])
    assert len(images) == 2  # the <noscript> copies are gone
    assert "v2-aaa_b.jpg" in images[0] and "/-/mirror/resource?url=" in images[0]
    assert "src=" not in images[1]  # not archived: nothing to load


def test_a_block_named_like_an_image_that_holds_prose_is_not_a_figure():
    """dannychoo's `div.caption-image` holds the photo and the post's paragraphs (a class with
    "caption" in it trafilatura drops itself: this one says "image")."""
    article = (
        LONG
        + '<div class="image-box"><img src="/chart.png" alt="Chart"><div class="bbcode"><p>UNIQUE sentence of the post, short.</p></div></div>'
        + LONG
    )
    result = extract(page(article, "en").encode(), "https://blog.example/p", "text/html")
    assert "UNIQUE sentence" in result.text and "UNIQUE sentence" in result.markdown
    assert result.images == ["https://blog.example/chart.png"]


def test_loose_text_after_an_image_block_stays():
    """Blogger's `div.separator` before the post's first sentences; a `wp-caption` block the
    parser closed a paragraph for; a figure inside a paragraph of text."""
    separator = (
        '<div class="post-body"><div class="separator" style="clear: both;"><a href="/big.jpg"><img src="/small.jpg"></a></div>'
        "FIRST: Jokes about the law of cosines may not be everyone's cup of tea.<br><br>" + LONG + "</div>"
    )
    wp = (
        '<p><div class="wp-caption alignright"><img src="/oval.jpg"><p class="wp-caption-text">A year ago.</p></div>'
        "SECOND: Well, I guess I have hit rock bottom here, not in a way anyone would think.</p>" + LONG
    )
    inline = (
        '<p><figure class="article-picture"><img src="/kevin.jpg" alt="Kevin"><figcaption>Kevin</figcaption></figure>'
        "THIRD: Drama Desk and Theatre World Award winner Kevin Anderson has joined the cast.</p>" + LONG
    )
    for marker, article, image in (("FIRST", separator, "small.jpg"), ("SECOND", wp, "oval.jpg"), ("THIRD", inline, "kevin.jpg")):
        result = extract(page(LONG + article, "en").encode(), "https://blog.example/p", "text/html")
        assert marker in result.text, (marker, result.text[:300])
        assert result.images == [f"https://blog.example/{image}"], marker


@pytest.mark.parametrize(
    "markup",
    [
        f'<img src="a.jpg" width="{"1" * 5000}">',
        '<img src="http://[oops/a.jpg">',
        '<img srcset="http://[oops/a.jpg 100w">',
        '<img data-src="http://[oops/a.jpg">',
        '<img data-foo="' + ".jpg?" * 20_000 + ' x">',
    ],
)
def test_no_attribute_makes_extraction_raise(markup):
    result = extract(page(LONG + f"<p>x {markup} y</p>" + LONG, "en").encode(), "https://blog.example/p", "text/html")
    assert result.status == "archived" and "long paragraph" in result.text


def test_a_page_that_writes_the_marker_characters_keeps_them():
    symbols = "<p>The tetragram \U0001d308 (U+1D308) is called Opposition; \U0001d309 is Branching Out. " + "More text. " * 20 + "</p>"
    entities = "<p>Visible &#x1D308;claim&#x1D309; and &#x1D306;&#x1D310;&#x1D307; as written.</p>"
    result = extract(page(symbols + entities + '<aside><img src="/ad.jpg"></aside>' + LONG, "en").encode(), "https://blog.example/p", "text/html")
    assert "\U0001d308 (U+1D308) is called Opposition" in result.text and "Visible \U0001d308claim\U0001d309" in result.text
    assert result.images == []


def test_teasers_avatars_and_buttons_stay_out_and_a_linked_pair_stays_in():
    article = (
        LONG
        + (
            '<p><a href="/full.jpg"><img src="/one.jpg"><span><img src="/two.jpg"></span></a></p>'
            '<p><a href="https://share.example/?u=x"><img src="/img/share-twitter.png"></a> '
            '<img src="http://s7.addthis.com/static/btn/lg-addthis-en.gif"> <img src="/stats/pixel.gif"></p>'
        )
        + LONG
    )
    article += (
        '<ul class="related"><li class="post"><a href="/other-story"><span class="thumb"><img src="/teaser.jpg"></span></a>'
        '<div class="story-info"><a href="/other-story">Another story worth a click</a></div></li></ul>'
    )
    result = extract(page(article, "en").encode(), "https://blog.example/p", "text/html")
    assert result.images == ["https://blog.example/one.jpg", "https://blog.example/two.jpg"]


def test_captions_hold_no_script(tmp_path):
    article = (
        LONG + '<figure><img src="/h.jpg"><figcaption>A harbour.<script>var secret = 1;</script><style>.x{}</style></figcaption></figure>' + LONG
    )
    result = extract(page(article, "en").encode(), "https://blog.example/p", "text/html")
    assert "*A harbour.*" in result.markdown and "secret" not in result.markdown


def test_reindex_settles_on_an_image_that_is_gone(tmp_path, web, cli):
    """An article whose image answers 404: reindex does not count it again and again, and no
    fetch asks for it again."""
    web.add("/img/here.png", PNG, content_type="image/png")
    url = web.add("/gone-image", page(ZH + '<p><img src="/img/here.png"></p><p><img src="/img/gone.png"></p>' + ZH).encode())
    fetch(tmp_path, [url])
    assert web.recorder.hits["/img/gone.png"] == 1
    for _ in range(2):
        result = cli("reindex", "--archive", str(tmp_path / "archive"))
        assert "images not archived yet" not in result.output
        result = cli("fetch", "--archive", str(tmp_path / "archive"), url, "--delay", "0", "--browser", "never")
        assert "fetching the images of" not in result.output
    assert web.recorder.hits["/img/gone.png"] == 1
