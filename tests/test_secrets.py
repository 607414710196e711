"""The user's secrets go only to their own hosts: --header values and cookies reach the seed hosts
(or the cookie's domain), never a page's third-party images, scripts or redirects, in the browser too."""

from __future__ import annotations

import json

import pytest

from .helpers import fetch, fetch_urls, with_images
from .webserver import PNG, article

LONG = "<p>" + "A page rendered in the browser with a token for its own host and nobody else's. " * 6 + "</p>"


@pytest.mark.hostile
def test_headers_go_only_to_seed_hosts(tmp_path, web, web2):
    web2.add("/elsewhere", article("elsewhere"))
    url = web.add("/jump", b"", status=302, Location=web2.url("/elsewhere"))
    image_page = web.add("/pic", with_images(web2.url("/img.png")))
    web2.add("/img.png", PNG, content_type="image/png")
    fetch_urls(tmp_path, [url, image_page], headers={"Authorization": "Bearer s3cret"})
    assert web.recorder.headers["/jump"][0]["Authorization"] == "Bearer s3cret"
    assert "Authorization" not in web2.recorder.headers["/elsewhere"][0]
    assert "Authorization" not in web2.recorder.headers["/img.png"][0]


@pytest.mark.hostile
def test_header_all_hosts_opts_out(tmp_path, web, web2):
    web2.add("/elsewhere", article("elsewhere"))
    url = web.add("/jump", b"", status=302, Location=web2.url("/elsewhere"))
    fetch_urls(tmp_path, [url], headers={"Authorization": "Bearer s3cret"}, header_all_hosts=True)
    assert web2.recorder.headers["/elsewhere"][0]["Authorization"] == "Bearer s3cret"


def test_cookies_are_sent_only_to_their_domain(tmp_path, web, web2):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tz_c0\tlogged-in-token\n"
        "127.0.0.2\tFALSE\t/\tFALSE\t0\tother\tsecond-host\n"
        ".zhihu.com\tTRUE\t/\tFALSE\t0\td_c0\tnever-sent-here\n"
        "127.0.0.1\tFALSE\t/\tTRUE\t0\tsecure_only\tnot-over-http\n",
        encoding="utf-8",
    )
    fetch_urls(tmp_path, [web.url("/cookies"), web2.url("/cookies")], cookies=cookies)
    assert web.recorder.cookies["/cookies"] == ["z_c0=logged-in-token"]
    assert web2.recorder.cookies["/cookies"] == ["other=second-host"]


@pytest.mark.slow
@pytest.mark.hostile
def test_header_values_stay_with_the_seed_host_in_the_browser(tmp_path, web, web2):
    from .helpers import CHROMIUM, chromium_or_skip

    chromium_or_skip()
    web2.add("/img.png", b"\x89PNG\r\n\x1a\nimage", content_type="image/png")
    web2.add("/api", b"{}", content_type="application/json")
    web2.add("/landing", b"landed", content_type="text/plain")
    web.add("/own.png", b"\x89PNG\r\n\x1a\nown", content_type="image/png")
    web.add("/hop", b"", status=302, Location=web2.url("/landing"))
    body = (
        f"<html><head><title>Token</title></head><body><article><h1>Token</h1>{LONG}"
        f'<img src="/own.png"><img src="{web2.url("/img.png")}"></article>'
        f"<script>fetch({json.dumps(web2.url('/api'))}); fetch('/hop');</script></body></html>"
    )
    url = web.add("/page", body.encode())
    fetch(tmp_path, [url], headers={"Authorization": "Bearer s3cret"}, browser="always", chromium=CHROMIUM, images=False, timeout=12)
    seen = {path: [h.get("Authorization") for h in hits] for path, hits in web.recorder.headers.items()}
    assert seen["/page"] == ["Bearer s3cret"]  # fetched once: the render is made from that capture
    assert seen["/own.png"] == ["Bearer s3cret"]
    elsewhere = {path: [h.get("Authorization") for h in hits] for path, hits in web2.recorder.headers.items()}
    assert set(elsewhere) >= {"/img.png", "/api", "/landing"}
    assert all(value is None for values in elsewhere.values() for value in values), elsewhere
