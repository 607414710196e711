"""The user's secrets kept out of the archive: what a request carried to log in is written to the
WARC files with its values replaced, so that sharing the files (or a WACZ made of them) never
shares the login.

Request records keep every header's name and, for cookies, each cookie's name (what was sent is
still readable: `Cookie: z_c0=<redacted>; _xsrf=<redacted>`); the values of `Cookie`,
`Authorization` and `Proxy-Authorization` (its scheme kept: `Bearer <redacted>`) and of every
`--header` the user gave are replaced. A response's `Set-Cookie` that renews one of the user's own
cookies (same name) has its value replaced too: it is the same login, refreshed. The records stay
valid WARC (their digests are computed over what is written) and replay as before: pywb replays
responses, not requests.
"""

from __future__ import annotations

__all__ = ["REDACTED", "redact_request", "redact_response"]

REDACTED = "<redacted>"
_AUTHORIZATION = frozenset({"authorization", "proxy-authorization"})


def redact_request(headers: list[tuple[str, str]], private: frozenset[str]) -> list[tuple[str, str]]:
    """A request's headers as its record keeps them; `private`: the lower-cased names of the user's --header values."""
    kept = []
    for name, value in headers:
        lower = name.lower()
        if lower == "cookie":
            value = "; ".join(f"{part.partition('=')[0].strip()}={REDACTED}" for part in value.split(";") if part.strip())
        elif lower in _AUTHORIZATION:
            scheme, space, _ = value.strip().partition(" ")
            value = f"{scheme} {REDACTED}" if space else REDACTED
        elif lower in private:
            value = REDACTED
        kept.append((name, value))
    return kept


def redact_response(headers: list[tuple[str, str]], cookie_names: frozenset[str]) -> list[tuple[str, str]]:
    """A response's headers as its record keeps them: a `Set-Cookie` of one of the user's cookies without its value."""
    if not cookie_names:
        return headers
    kept = []
    for name, value in headers:
        if name.lower() == "set-cookie":
            pair, semicolon, attributes = value.partition(";")
            cookie = pair.partition("=")[0].strip()
            if cookie in cookie_names:
                value = f"{cookie}={REDACTED}{semicolon}{attributes}"
        kept.append((name, value))
    return kept
