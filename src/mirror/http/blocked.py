"""Recognising anti-bot and login pages, which must never be stored as articles."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

HINT = (
    "the site wants a logged-in browser: re-run with --cookies-from-browser BROWSER (or --cookies FILE), "
    "or save the page in your browser and `mirror add` it (docs/logins.md)"
)

# Specific markers only: an article that merely mentions 安全验证 is still an article.
_ZHIHU = re.compile(r"/account/unhuman|unhuman\?type=")
_WECHAT = re.compile(r"环境异常[\s\S]{0,400}完成验证后即可继续访问")
_CLOUDFLARE_TITLE = re.compile(r"^\s*(Just a moment\.\.\.|Attention Required! \| Cloudflare)", re.I)
# not /cdn-cgi/challenge-platform/: Cloudflare injects that script into ordinary pages too
_CLOUDFLARE_MARKS = ("cf-chl-", "cf_chl_opt")
_CAPTCHA_TITLE = re.compile(r"^\s*(captcha|验证码|人机验证|security check)\s*([-|–—].{0,40})?$", re.I)
_LOGIN_PATH = re.compile(
    r"/(signin|sign_in|sign-in|login|log-in|log_in|logon|passport|account/login|servicelogin|sso|cas/login|session/new|oauth2?/authorize)\b", re.I
)
_PASSWORD_FORM = re.compile(r"<input[^>]+type\s*=\s*[\"']?password", re.I)
# a title that is nothing but signing in ("Sign in - Google Accounts", "登录 - 知乎", "用户登录"),
# not one that mentions it ("Login flows explained")
_LOGIN_WORDS = re.compile(r"^\s*((sign|log) ?in( to [^-|–—]{1,30})?|(用户|账号|帐号|请先|扫码)?登[录錄])\s*([-|–—:·].*)?$", re.I)
_TITLE = re.compile(r"<title[^>]*>([^<]{0,200})</title>", re.I)
# A challenge page says a sentence or two; an article quoting it says much more.
_CHALLENGE_TEXT = 400
_INVISIBLE = re.compile(r"<(script|style|noscript|template)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>|\s+", re.I | re.S)


def blocked_reason(status: int, final_url: str, original_url: str, head: str) -> str | None:
    """Why a response is an anti-bot or login wall rather than the page, or None.

    `head` is the start of the decoded body (a few dozen KB is enough). Plain
    substring tests come first: this runs on every page the fetcher sees.
    """
    if status in (401, 407):
        return f"HTTP {status}: login required"
    title = _title(head) or ""
    if "完成验证后即可继续访问" in head and _WECHAT.search(head) and _visible_chars(head) < _CHALLENGE_TEXT:
        return "WeChat verification page"
    if title.lstrip().startswith("安全验证") or ("unhuman" in head and _ZHIHU.search(head)):
        return "zhihu anti-bot check"
    if any(mark in head for mark in _CLOUDFLARE_MARKS) or _CLOUDFLARE_TITLE.search(title):
        return "Cloudflare challenge"
    if _CAPTCHA_TITLE.search(title):
        return "captcha page"
    if status == 403 and "zhihu.com" in (urlsplit(final_url).hostname or ""):
        return "zhihu refuses anonymous clients (HTTP 403)"
    if reason := redirected_to_sign_in(original_url, final_url):
        return reason
    # Many articles carry a login box in their header; a wall is a page *about* signing in.
    if status == 200 and _LOGIN_WORDS.search(title.strip()) and _PASSWORD_FORM.search(head):
        return "sign-in wall (a password form instead of the article)"
    return None


def redirected_to_sign_in(original_url: str, final_url: str, title: str | None = None) -> str | None:
    """Why a page that redirected elsewhere landed on a sign-in page (its path, or a title that is
    nothing but signing in), or None; a page that was a sign-in page itself is no wall."""
    if final_url == original_url or _LOGIN_PATH.search(urlsplit(original_url).path or ""):
        return None
    if _LOGIN_PATH.search(urlsplit(final_url).path or ""):
        return "redirected to a sign-in page"
    if title and _LOGIN_WORDS.search(title.strip()):
        return f"redirected to a sign-in page ({title.strip()[:80]!r})"
    return None


def _visible_chars(head: str) -> int:
    """Characters a reader would see (scripts, styles, tags and spaces removed)."""
    return len(_INVISIBLE.sub("", head))


def _title(head: str) -> str | None:
    start = head.find("<title")
    if start < 0:
        start = head.find("<TITLE")
        if start < 0:
            return None
    match = _TITLE.match(head, start)
    return match[1] if match else None
