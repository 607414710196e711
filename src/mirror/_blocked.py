"""Recognising anti-bot and login pages, which must never be stored as articles."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

HINT = "the site wants a logged-in browser: export its cookies to cookies.txt and re-run with --cookies FILE"

_CHALLENGES = [
    # specific markers only: an article that merely mentions 安全验证 is still an article
    ("zhihu anti-bot check", re.compile(r"<title>\s*安全验证|/account/unhuman|unhuman\?type=")),
    ("WeChat verification page", re.compile(r"环境异常[\s\S]{0,400}完成验证后即可继续访问")),
    ("Cloudflare challenge", re.compile(r"<title>\s*(Just a moment\.\.\.|Attention Required! \| Cloudflare)", re.I)),
    # not /cdn-cgi/challenge-platform/: Cloudflare injects that script into ordinary pages too
    ("Cloudflare challenge", re.compile(r"cf-chl-|cf_chl_opt")),
    ("captcha page", re.compile(r"<title>\s*(captcha|验证码|人机验证|security check)\s*([-|–—][^<]{0,40})?</title>", re.I)),
]
_ANY_CHALLENGE = re.compile("|".join(f"(?:{p.pattern})" for _, p in _CHALLENGES), re.I)
_LOGIN_PATH = re.compile(r"/(signin|sign_in|sign-in|login|logon|passport|account/login)\b", re.I)
_PASSWORD_FORM = re.compile(r"<input[^>]+type\s*=\s*[\"']?password", re.I)
# a title that is nothing but signing in ("Sign in - Google Accounts", "登录 - 知乎", "用户登录"),
# not one that mentions it ("Login flows explained")
_LOGIN_WORDS = re.compile(
    r"^\s*((sign|log) ?in( to [^-|–—]{1,30})?|(用户|账号|帐号|请先|扫码)?登[录錄])\s*([-|–—:·].*)?$", re.I
)
_TITLE = re.compile(r"<title[^>]*>([^<]{0,200})</title>", re.I)


def blocked_reason(status: int, final_url: str, original_url: str, head: str) -> str | None:
    """Why a response is an anti-bot or login wall rather than the page, or None.

    `head` is the start of the decoded body (a few dozen KB is enough).
    """
    if status in (401, 407):
        return f"HTTP {status}: login required"
    if _ANY_CHALLENGE.search(head):  # one pass over the page; then find which
        for name, pattern in _CHALLENGES:
            if pattern.search(head):
                return name
    if status == 403 and "zhihu.com" in (urlsplit(final_url).hostname or ""):
        return "zhihu refuses anonymous clients (HTTP 403)"
    redirected_to_login = final_url != original_url and _LOGIN_PATH.search(urlsplit(final_url).path or "")
    if redirected_to_login and not _LOGIN_PATH.search(urlsplit(original_url).path or ""):
        return "redirected to a sign-in page"
    # Many articles carry a login box in their header; a wall is a page *about* signing in.
    title = _TITLE.search(head)
    if status == 200 and _PASSWORD_FORM.search(head) and title and _LOGIN_WORDS.search(title[1].strip()):
        return "sign-in wall (a password form instead of the article)"
    return None
