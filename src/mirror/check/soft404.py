"""Soft 404s: a 200 that is no article but an error page, a redirect to the site's front page, a
parked or for-sale domain, or a "deleted" notice (in English and Chinese), and the classic probe:
what the same host answers for a path that cannot exist. A real article that quotes those words
is not one: a notice counts only on a short page (its title or its text).

A page that now redirects to a sign-in form is no soft 404 but `blocked` (`sign_in`): the article
may well be there for a logged-in reader (`--cookies`)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from .._util.similar import same_text
from ..http.blocked import HINT, redirected_to_sign_in
from ..urls import site_of

__all__ = ["Probe", "probe_url", "sign_in", "verdict"]

SHORT_PAGE = 120  # words (a CJK character counts as one): past this a page is an article that may quote a notice
TITLE_REST = 12  # characters of a title besides its notice (a site's name, punctuation): more, and it is an article's title
TITLE_ONLY_WORDS = 15  # a page whose title alone is a notice says little else (an article about 404s says more)
NOTICE_SHARE = 0.3  # of a short page's text that the notice is at least: less, and the page says more than that
# what sites say instead of the page, as the title or the bulk of a short page
_NOTICES = re.compile(
    "|".join(
        [
            r"你似乎来到了没有知识存在的荒原",  # zhihu
            r"该内容已被发布者删除",
            r"此内容因违规无法查看",
            r"该公众号已迁移",
            r"此内容被投诉且经审核涉嫌侵权",  # WeChat
            r"(?:该|此|本)?(?:文章|博文|内容|页面|帖子)(?:已经?被?(?:作者)?删除|不存在|已失效|走丢了)",  # CSDN, cnblogs, generic
            r"(?:您|你)?(?:所)?(?:访问|请求|查看)的(?:页面|文章|博文|内容)(?:不存在|已被删除|找不到)",
            r"页面(?:不存在|未找到|找不到了?)",
            r"找不到(?:该|此)?页面",
            r"404\s*(?:错误|页面)",
            r"\b404\b[\s:.\-–—|]*(?:page\s+)?not\s+found",
            r"\bpage\s+(?:not\s+found|does\s*n[o']t\s+exist|cannot\s+be\s+found)",
            r"\bthe\s+page\s+you\s+(?:requested|were\s+looking\s+for|are\s+looking\s+for)\s+(?:could\s+not|cannot|can't|does\s*n[o']t|was\s+not)",
            r"\b(?:this|the)\s+(?:post|article|story|page|content)\s+(?:has\s+been|was)\s+(?:deleted|removed)",
            r"\b(?:this|the)\s+(?:post|article|story|page|content)\s+is\s+no\s+longer\s+available",
            r"\bthe\s+requested\s+(?:url|page|resource)\b.{0,200}?\bwas\s+not\s+found",
            r"^\s*(?:404\s*)?(?:page\s+)?not\s+found\s*$",
        ]
    ),
    re.IGNORECASE | re.MULTILINE,
)
_PARKED = re.compile(
    "|".join(
        [
            r"\bthis\s+domain\s+(?:name\s+)?(?:is|may\s+be)\s+for\s+sale",
            r"\bbuy\s+this\s+domain",
            r"\bdomain\s+(?:is\s+)?for\s+sale",
            r"\bparked\s+(?:free|domain|by)",
            r"\bdomain\s+parking",
            r"sedoparking|parkingcrew|bodis\.com|dan\.com/buy-domain|afternic",
            r"(?:该|此)?域名(?:正在|可以|已)?(?:出售|转让|待售)",
        ]
    ),
    re.IGNORECASE,
)
# a short page that asks for a password: the sign-in form a redirect landed on (its title may be the site's name)
_SIGN_IN_TEXT = re.compile(r"\b(?:sign|log)\s?in\b|\bpassword\b|登[录錄]|密[码碼]", re.I)
_FRONT_PATHS = frozenset({"", "/", "/index.html", "/index.htm", "/index.php", "/home", "/default.aspx", "/index.shtml"})


@dataclass(frozen=True)
class Probe:
    """What a host answers for a path that cannot exist: 200s there mean the host's 404 is soft."""

    status: int | None
    final_url: str
    text: str | None


def probe_url(url: str) -> str:
    """A path on `url`'s server that no site has: 32 random hex digits, beside the page's own."""
    parts = urlsplit(url)
    folder = parts.path.rsplit("/", 1)[0] if "/" in parts.path else ""
    return urlunsplit((parts.scheme, parts.netloc, f"{folder}/mirror-{secrets.token_hex(16)}-no-such-page", "", ""))


def sign_in(url: str, final_url: str, title: str | None, text: str | None, words: int) -> str | None:
    """Why the 200 that `url` redirected to (`final_url`) is a sign-in form, not the page: a
    sign-in path or title, or a short page that asks to sign in and for a password. None when it
    was not redirected to another path (http to https is no sign-in), or landed on a page."""
    if urlsplit(final_url).path.rstrip("/") == urlsplit(url).path.rstrip("/"):
        return None
    reason = redirected_to_sign_in(url, final_url, title)
    if reason is None and words < SHORT_PAGE and len({m.lower() for m in _SIGN_IN_TEXT.findall(f"{title or ''} {text or ''}")}) >= 2:
        reason = "redirected to a sign-in form"
    return f"{reason}; {HINT}" if reason else None


def verdict(url: str, final_url: str, title: str | None, text: str | None, words: int, probe: Probe | None = None) -> str | None:
    """Why the 200 that `url` gave (ending at `final_url`, its article `title`/`text` of `words`)
    is a soft 404, or None when it is a page."""
    if _front_page(url, final_url):
        return f"redirected to the site's front page ({final_url[:200]})"
    if words < SHORT_PAGE:
        for what, pattern in (('a "not found" or "deleted" notice', _NOTICES), ("a parked or for-sale domain", _PARKED)):
            by_title = _says_only(pattern, title, TITLE_REST, 0.0) if words < TITLE_ONLY_WORDS else None
            found = by_title or _says_only(pattern, text, len(text or ""), NOTICE_SHARE)
            if found:
                return f"{what}: {found[:80]!r}"
    if probe is not None and probe.status is not None and 200 <= probe.status < 300:
        if _same_place(final_url, probe.final_url) and final_url != url:
            return f"the host sends a path that cannot exist to the same place ({final_url[:200]})"
        if text and probe.text and same_text(text, probe.text):
            return "the host answers a path that cannot exist with the same page"
    return None


def _says_only(pattern: re.Pattern, text: str | None, rest: int, share: float) -> str | None:
    """The notice `text` is (little else in it: at most `rest` other characters, the notice at least
    `share` of it), or None: "解决 Vue 路由刷新后页面不存在的问题" quotes a notice, it is not one."""
    plain = " ".join((text or "").split())
    found = pattern.search(plain)
    if found is None:
        return None
    others = len(re.sub(r"[\W_]+", "", plain[: found.start()] + plain[found.end() :]))
    if others > rest or len(found.group(0)) < share * len(plain):
        return None
    return found.group(0)


def _front_page(url: str, final_url: str) -> bool:
    """An article's address that now redirects to its site's home page."""
    before, after = urlsplit(url), urlsplit(final_url)
    if before.path in _FRONT_PATHS and not before.query:
        return False  # the seed was the front page
    return after.path in _FRONT_PATHS and not after.query and site_of(final_url) == site_of(url)


def _same_place(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname, pa.path.rstrip("/"), pa.query) == (pb.hostname, pb.path.rstrip("/"), pb.query)
