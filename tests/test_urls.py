"""URLs: normalisation, what is skipped and why, glued-URL repairs, tracking parameters, and
references resolved against their page."""

from __future__ import annotations

import re
import string
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror import urls
from mirror.urls import classify, glue_candidates, normalize, normalize_plain, skip_reason, unwrap_redirect

from .helpers import SEEDS, corpus_or_skip

WEIXIN = "https://mp.weixin.qq.com/s?__biz=MzA3MzI4MjgzMw==&mid=2650771181&idx=1&sn=30b2a5abc7261b4f2ea122e8e96fdabf"


_param = st.text(alphabet=string.ascii_letters + string.digits + "_-.%~", min_size=1, max_size=8)


_value = st.text(alphabet=string.ascii_letters + string.digits + "-._~%+=/:显存", max_size=10)


_segment = st.text(alphabet=string.ascii_letters + string.digits + "-._~%@()+,;显存 ", max_size=10)


_host = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,8}[A-Za-z0-9])?(\.[A-Za-z]{2,5}){1,2}", fullmatch=True)


@st.composite
def http_urls(draw):
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    host = draw(_host)
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    path = "/".join(draw(st.lists(_segment, max_size=4)))
    pairs = draw(st.lists(st.tuples(_param, _value), max_size=4))
    query = "&".join(f"{k}={v}" for k, v in pairs)
    fragment = draw(st.sampled_from(["", "#top", "#wechat_redirect", "#L71"]))
    return f"{scheme}://{host}{port}/{path}" + (f"?{query}" if query else "") + fragment


_weixin_id = st.text(alphabet=string.ascii_letters + string.digits, min_size=4, max_size=12)


_noise = st.lists(
    st.sampled_from(["chksm=8a7c", "scene=21", "from=timeline", "isappinstalled=0", "spm=a.b.c", "utm_source=wx"]),
    unique=True,
)


def _identity(url: str) -> tuple:
    return normalize(url), classify(url), unwrap_redirect(url)


def _identity_by_urlsplit(url: str) -> tuple:
    """`_identity` with the fast path switched off: every URL goes through urlsplit."""
    with mock.patch.object(urls, "_PLAIN", re.compile(r"(?!)")):
        return _identity(url)


def _links_in_real_documents() -> list[str]:
    found = {word for path in SEEDS.glob("*.txt") for word in path.read_text(encoding="utf-8").split()}
    for page in sorted(corpus_or_skip().rglob("*.htm*"))[:300]:
        text = page.read_bytes().decode("utf-8", errors="replace")
        found.update(re.findall(r"""(?:href|src)\s*=\s*["']([^"']{1,800})["']""", text))
    return sorted(found)


_URL_PIECES = [
    "http://",
    "HTTPS://",
    "ftp://",
    "Example.COM",
    "a-b.cn",
    "a.",
    ".",
    "-",
    "xn--fiqs8s.cn",
    "中文.cn",
    "[::1]",
    "[::1",
    "user:pw@",
    "@",
    ":80",
    ":443",
    ":0",
    ":65535",
    ":65536",
    ":99999",
    ":",
    ":8o",
    ":١",
    "/",
    "/./",
    "/../",
    "/a/b/../c",
    "/.",
    "?",
    "#",
    "&",
    "=",
    "%2f",
    "%zz",
    "+",
    "utm_source=x",
    "spm=1",
    "q=%e4%b8%ad",
    "b=2&a=1",
    "Share_Source=q",
    "中",
    " ",
    "\t",
    "\n",
    "\x01",
    "\x7f",
    "\ud800",
    "\u3000",
    "link.zhihu.com/?target=https%3A%2F%2Fa.b%2Fc",
    "www.google.com/url?q=https://a.b/c",
    "mp.weixin.qq.com/s?__biz=1&mid=2&idx=3&sn=4&chksm=5",
    "www.baidu.com/s?wd=x&ie=utf-8",
]


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("HTTPS://Zhuanlan.Zhihu.COM:443/p/1#comments", "https://zhuanlan.zhihu.com/p/1"),
        ("http://example.com:80", "http://example.com/"),
        ("http://example.com:8080/a/./b/../c", "http://example.com:8080/a/c"),
        ("https://x.cn/p?utm_source=a&utm_medium=b&id=3", "https://x.cn/p?id=3"),
        ("https://x.cn/p?b=2&a=1", "https://x.cn/p?a=1&b=2"),
        ("https://x.cn/p?share_token=1&share_source=qq&from_source=x&s_r=0&wechatShare=1", "https://x.cn/p"),
        ("https://www.google.com/url?q=https://example.org/a%3Fb%3D1&sa=D", "https://example.org/a?b=1"),
        ("https://link.zhihu.com/?target=http%3A//example.org/x", "http://example.org/x"),
        ("https://www.baidu.com/s?wd=%e6%98%be%e5%ad%98", "https://www.baidu.com/s?wd=%E6%98%BE%E5%AD%98"),
        ("https://zh.wikipedia.org/wiki/显存", "https://zh.wikipedia.org/wiki/%E6%98%BE%E5%AD%98"),
        ("https://例子.测试/", "https://xn--fsqu00a.xn--0zwm56d/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("https://mp.weixin.qq.com/s/abc?scene=21&chksm=1#wechat_redirect", "https://mp.weixin.qq.com/s/abc"),
    ],
)
def test_urls_normalize_to_one_spelling(written, normal):
    assert normalize(written) == normal
    assert normalize(normal) == normal


def test_spellings_of_one_weixin_article_are_one_url():
    shared = WEIXIN + "&chksm=84e4b2e5b3933bf3&scene=21&from=timeline&isappinstalled=0#wechat_redirect"
    reordered = "https://MP.weixin.qq.com/s?sn=30b2a5abc7261b4f2ea122e8e96fdabf&idx=1&mid=2650771181&__biz=MzA3MzI4MjgzMw=="
    assert normalize(shared) == normalize(WEIXIN) == normalize(reordered)
    other = WEIXIN.replace("idx=1", "idx=2")
    assert normalize(other) != normalize(WEIXIN)


def test_unfetchable_urls_are_classified_with_a_reason():
    assert classify("/images/x.png")[0] == "relative"
    assert classify("mailto:a@b.c")[0] == "scheme"
    assert classify("file:///etc/passwd")[0] == "scheme"
    assert classify("ftp://example.com/x")[0] == "scheme"
    assert classify("data:text/plain,hi")[0] == "scheme"
    assert classify("http://")[0] == "malformed"
    assert classify("http://a:99999/")[0] == "malformed"
    assert skip_reason("https://192.168.1.10/intranet") is None  # intranet stays allowed
    assert skip_reason("http://localhost:8000/") is None


def test_a_url_glued_to_words_gives_shorter_candidates():
    assert glue_candidates("https://github.com/openai/tritonPython") == (
        "https://github.com/openai/triton",
        "https://github.com/openai/",
    )
    assert glue_candidates("https://github.com/ray-project/ray") == ()
    assert glue_candidates("https://x.cn/a?Q=1") == ()


@settings(max_examples=400, deadline=None)
@given(http_urls())
def test_normalize_is_idempotent_on_urls(url):
    once = normalize(url)
    assert normalize(once) == once
    assert "#" not in once


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        http_urls(),
        st.text(max_size=80),
        st.sampled_from(
            [
                "https://link.zhihu.com/?target=https%3A%2F%2Fa.cn%2Fx",
                "http://A.B:99999/x",
                "https://a.b:443/%7e?b=2&a=1",
                " https://a.b/x",
                "https://a.b/../c/./d",
                "https://www.google.com/url?q=https://x.org/",
            ]
        ),
    )
)
def test_normalize_plain_is_normalize_of_a_fetchable_url(url):
    """The seeds' fast path: either the answer normalize() gives a fetchable URL, or no answer."""
    fast = normalize_plain(url)
    if fast is not None:
        assert skip_reason(url) is None
        assert fast == normalize(url)


@pytest.mark.hostile
@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_normalize_and_classify_never_raise(text):
    once = normalize(text)
    assert normalize(once) == once
    classify(text)
    glue_candidates(text)


@settings(max_examples=200, deadline=None)
@given(_weixin_id, st.integers(1, 8), _weixin_id, _noise, st.booleans())
def test_weixin_tracking_never_changes_identity(biz, idx, sn, noise, fragment):
    plain = f"https://mp.weixin.qq.com/s?__biz={biz}==&mid=2650771181&idx={idx}&sn={sn}"
    tracked = "&".join([plain, *noise]) + ("#wechat_redirect" if fragment else "")
    assert normalize(tracked) == normalize(plain)


@settings(max_examples=200, deadline=None)
@given(_weixin_id, _weixin_id, st.integers(1, 8), st.integers(1, 8), _noise)
def test_different_weixin_articles_never_collide(sn1, sn2, idx1, idx2, noise):
    a = f"https://mp.weixin.qq.com/s?__biz=MzA3&mid=1&idx={idx1}&sn={sn1}"
    b = "&".join([f"https://mp.weixin.qq.com/s?__biz=MzA3&mid=1&idx={idx2}&sn={sn2}", *noise])
    if (sn1, idx1) != (sn2, idx2):
        assert normalize(a) != normalize(b)
    short_a, short_b = f"https://mp.weixin.qq.com/s/{sn1}", f"https://mp.weixin.qq.com/s/{sn2}?scene=21"
    assert (normalize(short_a) == normalize(short_b)) == (sn1 == sn2)


@pytest.mark.parametrize(
    ("tracked", "plain"),
    [
        (
            "https://www.baidu.com/s?ie=utf-8&tn=84053098_3_dg&wd=%E6%B5%81%E6%B0%B4%E7%BA%BF",
            "https://www.baidu.com/s?wd=%E6%B5%81%E6%B0%B4%E7%BA%BF",
        ),
        ("https://www.baidu.com/s?wd=x&rsv_spt=1&rsv_iqid=0x9&issp=1&f=8&rsv_bp=1&rsv_idx=2&oq=x&inputT=600", "https://www.baidu.com/s?issp=1&wd=x"),
        (
            "https://www.bing.com/search?q=flash+attention&form=QBLH&pc=U531&sp=-1&cvid=ab12&qs=n&sc=8-15&sk=",
            "https://www.bing.com/search?q=flash+attention",
        ),
        (
            "https://www.google.com/search?q=triton&sourceid=chrome&ie=UTF-8&oq=trit&aqs=chrome.0.69i59j69i57",
            "https://www.google.com/search?q=triton",
        ),
        ("https://www.google.com.hk/search?q=triton&ei=abc&ved=0ahUKE&gs_lcp=Cgdn", "https://www.google.com.hk/search?q=triton"),
        ("https://www.sogou.com/web?query=x&_asf=www.sogou.com&_ast=&w=01019900&p=40040100&ie=utf8&sut=1", "https://www.sogou.com/web?query=x"),
        ("https://www.so.com/s?q=x&src=srp&fr=none&psid=ab12", "https://www.so.com/s?q=x"),
    ],
)
def test_search_engine_tracking_parameters_are_dropped(tracked, plain):
    assert normalize(tracked) == normalize(plain)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://www.baidu.com/s?wd=x&pn=10", "https://www.baidu.com/s?wd=x"),  # page 2 is another page
        ("https://www.baidu.com/s?wd=x", "https://www.baidu.com/s?wd=y"),
        ("https://tieba.baidu.com/f?kw=x&ie=utf-8", "https://tieba.baidu.com/f?kw=x"),  # not a search page: ie may matter
    ],
)
def test_what_was_searched_still_counts(a, b):
    assert normalize(a) != normalize(b)


def test_plain_url_fast_path_agrees_with_urlsplit_on_real_links():
    links = _links_in_real_documents()
    plain = [url for url in links if urls._plain(url.strip()) is not None]
    assert len(plain) > 150  # the fast path is what these links exercise
    assert [_identity(url) for url in links] == [_identity_by_urlsplit(url) for url in links]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_URL_PIECES), min_size=1, max_size=8).map("".join))
def test_plain_url_fast_path_agrees_with_urlsplit_on_any_url(url):
    assert _identity(url) == _identity_by_urlsplit(url)


@pytest.mark.parametrize(
    "written, base, resolved",
    [
        ("/img/a.png#x", "https://e.example/p/1", "https://e.example/img/a.png"),
        ("  b.css ", "https://e.example/p/1", "https://e.example/p/b.css"),
        ("//cdn.example/c.png", "http://e.example/", "http://cdn.example/c.png"),
        ("HTTPS://E.example/d", "", "HTTPS://E.example/d"),
        ("#top", "https://e.example/p", None),
        ("", "https://e.example/p", None),
        ("data:image/png;base64,iVBO", "https://e.example/", None),
        ("javascript:alert(1)", "https://e.example/", None),
        ("http://[oops/", "https://e.example/", None),
        ("/\ud800.png", "https://e.example/", "https://e.example/\ufffd.png"),
    ],
)
def test_a_reference_is_resolved_against_its_page_to_a_web_url_or_none(written, base, resolved):
    """One function for a page's links, images and stylesheets, as a browser resolves them."""
    assert urls.web_url(written, base) == resolved
