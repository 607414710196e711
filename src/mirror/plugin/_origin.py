"""Who may ask this server: other web pages may not, whatever they make the browser load.

A local datasette is reachable from every page the user visits. Two checks run on
every request, in the plugin's asgi_wrapper, so `datasette archive/mirror.db` gets
them as well as `mirror serve`:

- DNS rebinding. On a loopback socket only requests addressed to a loopback name
  (localhost, 127.x, [::1]) are answered, plus the names allowed with
  `mirror serve --allow-host` or the plugin setting `allow_hosts`.
- Cross-origin probing (Fetch Metadata, a resource isolation policy). A request the
  browser marks `Sec-Fetch-Site: cross-site` or `same-site` (another port of
  127.0.0.1 is the same site) is refused unless it is a top-level navigation: an
  `<img>`, `<script>`, `<link>`, font or `fetch()` from another page gets one and
  the same 403, whatever exists here. Every answer carries
  `Cross-Origin-Resource-Policy: same-origin`. Requests without these headers
  (curl, scripts, old browsers) pass.

The exception is the snapshot view: it is sandboxed, so its origin is opaque and
its own stylesheets, fonts and images arrive as cross-site. Their URLs carry a key,
an HMAC of the archived URL under a secret this server process draws at start,
and only a request with the right key passes (with CORP `cross-origin`, and CORS
for the snapshot's opaque origin, `null`, as fonts need). A key is as strong as the
secret: no other page can compute one or read it from a snapshot (it cannot read
our responses), and one key opens one archived file. A Referer check was the
alternative and is weaker: the snapshot sends none (`no-referrer`), and browsers,
extensions and proxies strip or shorten it, so it would have to fail open.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from urllib.parse import parse_qs

import click

from .._util.loopback import is_loopback_address

__all__ = ["guard", "resource_key", "validate_settings"]

SETTING = "allow_hosts"
_SECRET = secrets.token_bytes(32)  # per server process: keys die with it
_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::\d{1,5})?")
_SAME_ORIGIN = {"same-origin", "none"}  # none: the user typed the address or used a bookmark
HOST_REFUSED = (
    b"this mirror archive answers only requests addressed to localhost, 127.0.0.1 or [::1] "
    b"(allow a name with mirror serve --allow-host NAME, or the datasette plugin setting mirror: allow_hosts)\n"
)
ORIGIN_REFUSED = b"this mirror archive is not shown inside other web pages\n"


def resource_key(url: str) -> str:
    """The capability that lets a sandboxed snapshot load the archived `url`."""
    return hmac.new(_SECRET, url.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]


def allowed_hosts(datasette) -> set[str]:
    """The host names allowed beside loopback ones: the `allow_hosts` plugin setting."""
    names = (datasette.plugin_config("mirror") or {}).get(SETTING) or []
    return {_host_name(name) for name in ([names] if isinstance(names, str) else names)} - {""}


def validate_settings(datasette) -> None:
    """A bad `allow_hosts` is an error at startup, not a server that refuses everyone."""
    names = (datasette.plugin_config("mirror") or {}).get(SETTING)
    if names is not None and not isinstance(names, str) and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        # a click error: datasette's command line prints it as "Error: …" and exits 1, no traceback
        raise click.ClickException(f"the mirror plugin's {SETTING} setting must be a host name or a list of them, not {names!r}")


def guard(datasette, app):
    """Wrap datasette's ASGI app with both checks. The upload route (`uploads`, the plugin's only
    write) answers by its own rule: browser extensions and clients without an Origin, with the token."""
    from .uploads import UPLOAD_PATH, answer_upload

    resource_path = datasette.urls.path("/-/mirror/resource")
    upload_path = datasette.urls.path(UPLOAD_PATH)
    hosts: set[str] | None = None

    async def guarded(scope, receive, send):
        nonlocal hosts
        if scope["type"] != "http":  # lifespan passes; datasette serves no websockets
            return await app(scope, receive, send)
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers") or []}
        if hosts is None:
            hosts = allowed_hosts(datasette)
        if _on_loopback(scope) and not _host_allowed(headers.get("host", ""), hosts):
            return await _refuse(send, 400, HOST_REFUSED)
        if scope.get("path") == upload_path:
            isolated = [(b"cross-origin-resource-policy", b"same-origin"), (b"cross-origin-opener-policy", b"same-origin")]
            return await answer_upload(datasette, scope, receive, _adding_headers(send, isolated), headers)
        snapshot_resource = scope.get("path") == resource_path and _has_key(scope)
        if not (snapshot_resource or _same_origin_or_navigation(scope, headers, bool(getattr(datasette, "cors", False)))):
            return await _refuse(send, 403, ORIGIN_REFUSED)
        if snapshot_resource:
            added = [(b"cross-origin-resource-policy", b"cross-origin"), (b"vary", b"Origin")]
            if headers.get("origin") == "null":  # fonts load in CORS mode, from the snapshot's opaque origin
                added.append((b"access-control-allow-origin", b"null"))
        else:
            added = [(b"cross-origin-resource-policy", b"same-origin")]
        await app(scope, receive, _adding_headers(send, added + [(b"cross-origin-opener-policy", b"same-origin")]))

    return guarded


def _on_loopback(scope) -> bool:
    server = scope.get("server")
    return bool(server) and isinstance(server[0], str) and is_loopback_address(server[0])


def _host_allowed(header: str, allowed: set[str]) -> bool:
    name = _host_name(header)
    return bool(name) and (is_loopback_address(name) or name in allowed)


def _host_name(host: str) -> str:
    """The name in a Host header or a setting, without its port ("" if it is not one)."""
    match = _HOST_PORT.fullmatch(host.strip())
    return match[1].lower() if match else ""


def _same_origin_or_navigation(scope, headers: dict[str, str], cors: bool) -> bool:
    site = headers.get("sec-fetch-site")
    if site is None or site in _SAME_ORIGIN:
        return True
    mode, dest = headers.get("sec-fetch-mode"), headers.get("sec-fetch-dest")
    if mode == "navigate" and dest == "document" and scope.get("method") in ("GET", "HEAD"):
        return True  # a link to us from elsewhere opens; the other page cannot read what it shows
    return cors and mode == "cors"  # datasette --cors: the user asked for cross-origin API reads


def _has_key(scope) -> bool:
    args = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    url, key = args.get("url", [""])[0], args.get("key", [""])[0]
    return bool(url and key) and hmac.compare_digest(key, resource_key(url))


def _adding_headers(send, added: list[tuple[bytes, bytes]]):
    async def sending(message):
        if message["type"] == "http.response.start":
            headers = [(name.lower(), value) for name, value in message.get("headers") or []]
            present = {name for name, _ in headers}
            for name, value in added:
                if name == b"vary" and name in present:  # one Vary, with every header the answer depends on
                    headers = [(n, v + b", " + value if n == name else v) for n, v in headers]
                elif name not in present:
                    headers.append((name, value))
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def _refuse(send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                (b"cross-origin-resource-policy", b"same-origin"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
