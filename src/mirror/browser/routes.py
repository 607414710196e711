"""A rendered page's requests routed through the address rule (only addresses no more private
than the page's own, a navigation's redirects checked hop by hop) and given the user's --header
values for the seed hosts only."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from ..http.client import proxied
from ..http.gate import Reach

__all__ = ["MAX_REDIRECTS", "Routes"]

MAX_REDIRECTS = 10  # a navigation's redirects checked hop by hop, as the HTTP fetcher follows them


class Routes:
    """The routing part of a `Visit` (its state is the visit's)."""

    reach: Reach | None  # with `route`: how private the page's requests may be
    context: object  # the page's browser context
    renderer: object  # what the visit knows of its renderer (`visit.Rules`)
    result: object  # the `Rendered` the visit fills in
    counts: dict[str, int]  # refusals by kind

    async def route(self, reach: Reach | None) -> None:
        """Route every request (and WebSocket) of the page: through the address rule (with a
        `reach`), and with the user's --header values for the seed hosts only.

        Chromium follows a redirect without asking the route again, and the headers a route
        adds go along with it. So a request to a seed host is fetched here with the user's
        headers, one hop: a redirect goes back to the browser as it is, which follows it
        without them. A navigation (with a `reach`) is fetched here too, its redirects hop by
        hop, each checked: one to a more private address is refused before it is asked for.
        (The fetches here do not go through a proxy: behind one, the browser sends no
        --header values, and a navigation's redirects are checked once it has landed.)"""
        self.reach = reach
        await self.context.route("**/*", self._route)
        if reach is not None:
            await self.context.route_web_socket(re.compile(".*"), self._route_socket)

    async def _allowed(self, url: str, count: bool = True) -> bool:
        if self.reach is None or not url.startswith(("http://", "https://", "ws://", "wss://")) or url == self.result.url:
            return True  # data:, blob: and the like never leave the browser; the page itself is asked for
        host = (urlsplit(url).hostname or "").rstrip(".")
        if host == "localhost" or host.endswith(".localhost"):  # chromium answers these itself: this machine
            where: object = Reach.LOOPBACK
        else:
            where = await self.renderer.reach_of(url.replace("ws", "http", 1) if url.startswith("ws") else url)
        if not isinstance(where, Reach) or where > self.reach:
            # (a name our resolver cannot look up is refused too: chromium's may answer it otherwise)
            self.counts["private"] += count
            return False
        return True

    def _private_headers(self, url: str) -> dict[str, str]:
        hosts = self.renderer.private_hosts
        return self.renderer.headers if hosts is not None and (urlsplit(url).hostname or "") in hosts else {}

    async def _route(self, route) -> None:
        try:
            request = route.request
            if not await self._allowed(request.url):
                await route.abort("blockedbyclient")
                return
            if proxied(request.url):
                await route.continue_()
                return
            extra = self._private_headers(request.url)
            navigation = self.reach is not None and request.is_navigation_request()
            if not extra and not navigation:
                await route.continue_()
                return
            # (the context's cookies go with it: the fetch is the browser context's)
            response = await route.fetch(headers={**request.headers, **extra} if extra else None, max_redirects=0)
            if navigation and not await self._redirects_allowed(route, response):
                await route.abort("blockedbyclient")
                return
            await route.fulfill(response=response)
        except Exception:  # noqa: BLE001 - the fetch failed, or the page or its context closed meanwhile
            try:  # a request left unanswered would hold the page until the render's deadline
                await route.abort("failed")
            except Exception:  # noqa: BLE001 - answered already, or gone
                pass

    async def _redirects_allowed(self, route, response) -> bool:
        """Whether every hop of a navigation's redirects is allowed, asked hop by hop (the
        browser then follows them itself, unasked)."""
        url = route.request.url
        for _ in range(MAX_REDIRECTS):
            location = response.headers.get("location") if 300 <= response.status < 400 else None
            if not location:
                return True
            url = urljoin(url, location)
            if not url.startswith(("http://", "https://")) or not await self._allowed(url):
                return False
            response = await route.fetch(url=url, max_redirects=0)
        return False

    async def _route_socket(self, socket) -> None:
        try:
            if await self._allowed(socket.url):
                socket.connect_to_server()
            else:
                await socket.close(code=1008, reason="refused by the archiver")
        except Exception:  # noqa: BLE001
            pass
