"""Recognising anti-bot and login pages, which must never be stored as articles."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

HINT = "the site wants a logged-in browser: export its cookies to cookies.txt and re-run with --cookies FILE"

_CHALLENGES = [
    ("zhihu anti-bot check", re.compile(r"安全验证|unhuman|zse-ck|/account/unhuman")),
    ("WeChat verification page", re.compile(r"环境异常[\s\S]{0,400}完成验证后即可继续访问|当前环境异常")),
    ("Cloudflare challenge", re.compile(r"<title>\s*(Just a moment\.\.\.|Attention Required! \| Cloudflare)", re.I)),
    ("Cloudflare challenge", re.compile(r"cf-chl-|challenge-platform|cf_chl_opt")),
    ("captcha page", re.compile(r"<title>[^<]{0,80}(captcha|验证码|人机验证)[^<]{0,80}</title>", re.I)),
]
_LOGIN_PATH = re.compile(r"/(signin|sign_in|sign-in|login|logon|passport|account/login)\b", re.I)
_PASSWORD_FORM = re.compile(r"<input[^>]+type\s*=\s*[\"']?password", re.I)
_LOGIN_WORDS = re.compile(r"(sign ?in|log ?in|登录|登錄|请先登录|扫码登录|账号)", re.I)
_TITLE = re.compile(r"<title[^>]*>([^<]{0,200})</title>", re.I)


def blocked_reason(status: int, final_url: str, original_url: str, head: str) -> str | None:
    """Why a response is an anti-bot or login wall rather than the page, or None.

    `head` is the start of the decoded body (a few dozen KB is enough).
    """
    if status in (401, 407):
        return f"HTTP {status}: login required"
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
    if status == 200 and _PASSWORD_FORM.search(head) and title and _LOGIN_WORDS.search(title[1]):
        return "sign-in wall (a password form instead of the article)"
    return None
