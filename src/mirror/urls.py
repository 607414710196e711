"""URLs, for every stage: identity (what makes two spellings of a link the same page), and a
reference resolved against its page (`web_url`).

courlan supplies the tracker list and path quoting; this module adds what
courlan lacks for our seeds: Chinese sites' tracking parameters, redirector
unwrapping, WeChat's content-identifying query, and glued-URL repair.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl, quote, unquote_plus, urldefrag, urljoin, urlsplit, urlunsplit

from courlan.clean import TRACKERS_RE

from ._enums import Reason

__all__ = [
    "FETCHABLE_SCHEMES",
    "classify",
    "glue_candidates",
    "normalize",
    "normalize_plain",
    "site_of",
    "skip_reason",
    "unwrap_redirect",
    "web_url",
]

FETCHABLE_SCHEMES = frozenset({"http", "https"})
_SURROGATE = re.compile("[\ud800-\udfff]")

# Parameters courlan does not know, seen on the user's Chinese sites.
_EXTRA_TRACKERS = re.compile(r"^(?:spm(?:_id_from)?|vd_source|from_source|search_source|s_r|wechatshare|share_.*)$")
# Parameters that identify content even though courlan's tracker list matches them.
_CONTENT_PARAMS = frozenset({"keyword", "keywords", "kw", "q", "query", "wd", "word"})
# mp.weixin.qq.com/s?__biz=..&mid=..&idx=..&sn=.. : only these name the article.
_WEIXIN_PARAMS = frozenset({"__biz", "mid", "idx", "sn"})

# Search result pages people copy links from: the parameters that say what was searched
# (wd, q, query, page numbers, filters) stay; those naming the partner that sent the
# user, the input encoding, the suggestion clicked or the session go, so one search is
# one page. (host pattern, search path pattern, parameters to drop)
_SEARCH_ENGINES = (
    (r"(www\.|m\.)?baidu\.com", r"/(s|baidu)", r"tn|ie|oe|f|rsf|rsp|oq|inputt|rqlang|rqid|usm|ch|fenlei|sa|bs|prefixsug|sugsid|rsv_.*|_ss|cl|from"),
    (
        r"((www|cn|global)\.)?bing\.com",
        r"/(search|images/search|news/search)",
        r"form|pc|qs|sp|sc|cvid|sk|ghc|lq|pq|ghsh|ghacc|ghpl|ensearch|mkt|ocid|rdr|rdrig",
    ),
    (
        r"(www\.)?google(\.com?)?(\.[a-z]{2})?",
        r"/(search|webhp)?",
        r"sourceid|ie|oe|oq|aqs|ei|ved|uact|gs_.*|sclient|client|rlz|bih|biw|sxsrf|source|sa|dpr|sca_.*|iflsig|fbs|prmd",
    ),
    (
        r"(www\.|weixin\.|m\.)?sogou\.com",
        r"/(web|sogou|weixin|link)",
        r"ie|_asf|_ast|w|p|sut|sst0|lkt|sugsuv|sugtime|oq|ri|sourceid|s_from|_sug_|_sug_type_|pid|from",
    ),
    (r"(www\.|m\.)?so\.com", r"/s", r"src|fr|psid|ssid|ie|nlpv|eci|ls|sug_pos|sug|pq|mid|cp|adv_t"),
    (r"(html\.)?duckduckgo\.com", r"/(html/?)?", r"t|ia|atb|iax"),
)
_SEARCH_ENGINES_RE = [(re.compile(h), re.compile(path), re.compile(f"^(?:{drop})$")) for h, path, drop in _SEARCH_ENGINES]

# host -> query parameter holding the real destination
_REDIRECTORS: dict[str, tuple[str, ...]] = {
    "link.zhihu.com": ("target",),
    "link.juejin.cn": ("target",),
    "link.csdn.net": ("target",),
    "links.jianshu.com": ("to",),
    "www.google.com": ("q", "url"),
    "google.com": ("q", "url"),
}

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PERCENT = re.compile(r"%([0-9a-fA-F]{2})")
_PATH_SAFE = "/%:@!$&'()*+,;=~"  # RFC 3986 pchar: kept as written
_QUERY_SAFE = _PATH_SAFE + "?"
# what quote() leaves as it is: its always-safe characters and ours
_PATH_AS_IS = re.compile(r"[A-Za-z0-9_.\-~/%:@!$&'()*+,;=]*")
_QUERY_AS_IS = re.compile(r"[A-Za-z0-9_.\-~/%:@!$&'()*+,;=?]*")
# scheme://host[:port]/path?query#fragment with a plain ASCII host and nothing urlsplit would
# strip or reject: nearly every link. One match gives every part, where urlsplit and its
# hostname/port/username properties parse the same URL six times (most of the cost at 1e6 links).
_PLAIN = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9.\-]*[a-z0-9])?)(?::([0-9]{1,5}))?"
    r"(/[^?#\x00-\x20]*)?(?:\?([^#\x00-\x20]*))?(?:#[^\x00-\x20]*)?",
    re.IGNORECASE,
)


def site_of(url: str) -> str:
    """A URL's site, near enough: its host without `www.`, `m.`, `amp.` or `mobile.`."""
    host = (urlsplit(url).hostname or "").lower()
    for prefix in ("www.", "m.", "amp.", "mobile."):
        if host.startswith(prefix):
            return host[len(prefix) :]
    return host


def skip_reason(url: str) -> str | None:
    """Why `url` cannot be fetched (a sentence for the user), or None if it can."""
    problem = classify(url)
    return problem[1] if problem else None


def classify(url: str) -> tuple[str, str] | None:
    """(category, message) for a URL we will not fetch, or None if we can.

    Categories: `relative`, `scheme` (not http/https) and `malformed`.
    """
    url = url.strip()
    if not url:
        return Reason.MALFORMED, "empty link"
    if _plain(url) is not None:
        return None
    scheme = _scheme(url)
    if scheme is None:
        return Reason.RELATIVE, "relative link with no site to fetch it from"
    if scheme not in FETCHABLE_SCHEMES:
        return Reason.SCHEME, {
            "mailto": "e-mail address (mailto:), not a page",
            "javascript": "javascript: link, not a page",
            "file": "local file (file:), not on the web",
            "data": "inline data: URL, nothing to fetch",
        }.get(scheme, f"unsupported scheme {scheme}: (only http and https are fetched)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        return Reason.MALFORMED, f"malformed URL: {exc}"
    if not parts.hostname:
        return Reason.MALFORMED, "malformed URL: no host"
    if not re.fullmatch(r"[\w.\-\[\]:]+", parts.hostname):
        return Reason.MALFORMED, "malformed URL: invalid characters in host"
    return None


def normalize(url: str) -> str:
    """The identity of a page: one spelling for every way of writing its URL.

    Lower-cases scheme and host, drops default ports, the fragment and tracking
    parameters, unwraps known redirectors, sorts the query. Idempotent and
    never raises: a URL it cannot parse is returned stripped.
    """
    url = url.strip()
    try:
        fast = _fast_normalize(_plain(url))
        if fast is not None:
            return fast  # nearly every link: one regex match, no urlsplit
        for _ in range(3):  # a redirector may wrap another one
            inner = unwrap_redirect(url)
            if inner is None:
                break
            url = inner
        return _normalize(url)
    except (ValueError, UnicodeError):
        return url


def normalize_plain(url: str) -> str | None:
    """`normalize(url)` of a plain fetchable URL (see `_PLAIN`), or None: ask `skip_reason`
    and `normalize`. Nearly every seed link, in one match instead of their several steps."""
    try:
        return _fast_normalize(_plain_match(url))
    except (ValueError, UnicodeError):
        return None


def unwrap_redirect(url: str) -> str | None:
    """The destination of a known redirector link, or None."""
    plain = _plain(url)
    if plain is not None and plain[2].lower() not in _REDIRECTORS:
        return None
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return None
    keys = _REDIRECTORS.get(host)
    if not keys or (host.endswith("google.com") and parts.path != "/url"):
        return None
    params = dict(parse_qsl(parts.query))
    for key in keys:
        target = params.get(key, "").strip()
        if _scheme(target) in FETCHABLE_SCHEMES:
            return target
    return None


def glue_candidates(url: str) -> tuple[str, ...]:
    """Repairs for a URL that text-copying glued to the following word.

    `https://github.com/openai/tritonPython` was `.../triton` followed by the
    word "Python". We cut the last path segment before each capital letter and
    at its start, longest first; the fetcher tries them only after a 404.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    if parts.query or parts.fragment or "/" not in parts.path:
        return ()
    head, _, last = parts.path.rpartition("/")
    if not re.search(r"[A-Z]", last):
        return ()
    cuts = [i for i, ch in enumerate(last) if ch.isupper() and i > 0] + [0]
    seen: list[str] = []
    for cut in sorted(set(cuts), reverse=True):
        segment = last[:cut].rstrip(".,;:!?-_")
        candidate = urlunsplit((parts.scheme, parts.netloc, f"{head}/{segment}", "", ""))
        if candidate != url and candidate not in seen:
            seen.append(candidate)
    return tuple(seen)


def _scheme(url: str) -> str | None:
    match = re.match(r"([a-zA-Z][a-zA-Z0-9+.\-]*):", url)
    if not match:
        return None
    scheme = match[1].lower()
    # "localhost:8000/x" or "example.com:8080" are hosts with ports, not schemes
    if "." in scheme or re.match(r"\d+(/|$)", url[match.end() :]):
        return None
    return scheme


def _plain_match(url: str) -> re.Match[str] | None:
    """The parts of a plain http(s) URL (see `_PLAIN`), or None: urlsplit must judge it."""
    plain = _PLAIN.fullmatch(url)
    if plain is None or (plain[3] is not None and int(plain[3]) > 65535):
        return None
    return plain


_plain = lru_cache(maxsize=16)(_plain_match)  # classify() and normalize() ask in turn about the same link


def _fast_normalize(plain: re.Match[str] | None) -> str | None:
    """`normalize` of a plain URL that no redirector wraps, without urlsplit; else None."""
    if plain is None or plain[2].lower() in _REDIRECTORS:
        return None
    return _normalize_plain(plain)


def _normalize_plain(plain: re.Match[str]) -> str:
    """What `_normalize` makes of a plain URL, without urlsplit."""
    scheme, host, port = plain[1].lower(), plain[2].lower(), plain[3]
    netloc = host if port is None or int(port) == _DEFAULT_PORTS[scheme] else f"{host}:{int(port)}"
    path, query = _path_and_query(host, plain[4] or "", plain[5] or "")
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


def _normalize(url: str) -> str:
    plain = _plain(url)
    if plain is not None:
        return _normalize_plain(plain)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in FETCHABLE_SCHEMES:
        return url
    host = _normalize_host(parts.hostname or "")
    netloc = host
    if ":" in host:  # IPv6 literal
        netloc = f"[{host}]"
    if parts.port is not None and parts.port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{parts.port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    path, query = _path_and_query(host, parts.path, parts.query)
    return urlunsplit((scheme, netloc, path, query, ""))


def _path_and_query(host: str, path: str, query: str) -> tuple[str, str]:
    path = _upper_escapes(_quote(_remove_dot_segments(path) or "/", _PATH_SAFE, _PATH_AS_IS))
    return path, _clean_query(host, path, query)


def _normalize_host(host: str) -> str:
    host = host.lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return quote(host, safe=".-")


def _clean_query(host: str, path: str, query: str) -> str:
    if not query:
        return ""
    weixin = host == "mp.weixin.qq.com" and (path == "/s" or path.startswith("/s/"))
    engine = _search_trackers(host, path)
    if not weixin and engine is None:
        return _clean_plain_query(query)
    kept = []
    for pair in query.split("&"):
        if not pair or pair == "=":
            continue
        key = _param_name(pair.partition("=")[0]).lower()
        if weixin:  # /s/<id> needs nothing; /s?... needs exactly the article's four
            if path == "/s" and key in _WEIXIN_PARAMS:
                kept.append(pair)
        elif engine is not None and engine.match(key):
            continue
        elif not _is_tracker(key):
            kept.append(pair)
    return _joined_query(kept)


@lru_cache(maxsize=4096)  # seeds repeat the same queries (?utm_source=rss, ?share=1)
def _clean_plain_query(query: str) -> str:
    """`_clean_query` of a page that is neither a WeChat article nor a search result."""
    pairs = [pair for pair in query.split("&") if pair and pair != "="]
    return _joined_query([pair for pair in pairs if not _is_tracker(_param_name(pair.partition("=")[0]).lower())])


def _joined_query(kept: list[str]) -> str:
    """The parameters kept, sorted by name, as a query string."""
    if len(kept) > 1:
        kept.sort(key=lambda pair: _param_name(pair.partition("=")[0]))
    return _upper_escapes(_quote("&".join(kept), _QUERY_SAFE, _QUERY_AS_IS))


_param_name = lru_cache(maxsize=4096)(unquote_plus)  # seeds repeat the same few parameter names


@lru_cache(maxsize=4096)
def _is_tracker(key: str) -> bool:
    """A (lower-cased) query parameter that only tracks the visitor."""
    if key in _CONTENT_PARAMS:
        return False
    return bool(TRACKERS_RE.search(key) or _EXTRA_TRACKERS.match(key))


def _search_trackers(host: str, path: str) -> re.Pattern[str] | None:
    """The tracking parameters of a search engine's result page at host/path, if it is one."""
    for path_re, drop in _engines_at(host):
        if path_re.fullmatch(path):
            return drop
    return None


@lru_cache(maxsize=4096)  # seeds repeat the same few hosts
def _engines_at(host: str) -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]:
    return tuple((path_re, drop) for host_re, path_re, drop in _SEARCH_ENGINES_RE if host_re.fullmatch(host))


def _quote(text: str, safe: str, as_is: re.Pattern[str]) -> str:
    """quote(text, safe), skipped for the usual text it would not change."""
    return text if as_is.fullmatch(text) else quote(text, safe=safe)


def _upper_escapes(text: str) -> str:
    if "%" not in text:
        return text
    return _PERCENT.sub(lambda m: "%" + m[1].upper(), text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, so that /a/../b and /b are one page."""
    if "." not in path or (path.startswith("/") and "/." not in path):
        return path  # no "." or ".." segment: unchanged
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(output) > 1:
                output.pop()
        elif segment != ".":
            output.append(segment)
    result = "/".join(output)
    if path.endswith(("/.", "/..")):
        result += "/"
    return result if result.startswith("/") else "/" + result


def web_url(url: str | None, base: str = "") -> str | None:
    """`url` (a page's link, image or stylesheet, as written) resolved against `base`, without its
    fragment, if that is an http(s) URL; None for anything else (`data:`, `javascript:`, `#top`,
    `url()`, a URL Python cannot parse such as `http://[oops/`)."""
    if not url:
        return None
    # a page repeats its references (icons, sprites): short ones are remembered, never a
    # long data: URI (fonts and images inline in CSS run to megabytes)
    return _remembered_web_url(url, base) if len(url) <= 2048 else _web_url(url, base)


def _web_url(url: str, base: str) -> str | None:
    url = url.strip()
    if not url or url.startswith("#"):  # `url(#clip-path)`, `href=""`: the document itself, never fetched
        return None
    if _SURROGATE.search(url):  # as a browser reads it (a USVString): no lone surrogate in a URL
        url = _SURROGATE.sub("\ufffd", url)
    try:
        absolute = urldefrag(urljoin(base, url)).url
        scheme = urlsplit(absolute).scheme.lower()
    except ValueError:
        return None
    return absolute if scheme in FETCHABLE_SCHEMES else None


_remembered_web_url = lru_cache(maxsize=4096)(_web_url)
