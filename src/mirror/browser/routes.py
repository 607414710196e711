"""Every request a rendered page makes, answered by the run: the page's own document from its
HTTP capture (chromium never asks the server for it again), everything else through the run's
HTTP client (`Fetcher`), so that the browser's requests wait at the same per-host gates as the
fetch's, follow the same address rule, skip the same dead names and carry the same cookies and
headers, and are written to the same WARC files."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext

__all__ = ["BrowserRequest", "Fetcher", "Routes", "Served"]

# what a page may ask the run for: reading methods only. A script's POST is not sent: with the
# user's cookies it would act as the user (mark as read, vote, post), and an archive has no use for it.
_READING = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class BrowserRequest:
    """One request of a rendered page, as chromium would send it (its cookies included)."""

    url: str
    headers: dict[str, str]
    navigation: bool  # a frame's document (the page reloading after a challenge, a frame)
    kind: str  # Playwright's resource type: document, script, stylesheet, image, font, xhr, fetch, ...


@dataclass
class Served:
    """The answer chromium is given: a response (its body decoded) or, `refused`, none."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    refused: str | None = None  # why the run gave no answer: counted in the render's notes


Fetcher = Callable[[BrowserRequest], Awaitable[Served]]
# the headers a response is fulfilled without: the body is given whole and decoded
_FRAMING = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})


class Routes:
    """The routing part of a `Visit` (its state is the visit's)."""

    context: BrowserContext  # the page's
    result: object  # the `Rendered` the visit fills in
    document: Served  # the page's HTTP capture, served for its first load
    fetch: Fetcher
    counts: dict[str, int]  # refusals by kind
    answering: set[asyncio.Task]  # requests being answered: stopped with the visit

    async def route(self) -> None:
        """Answer every request (WebSockets are refused: the run cannot gate them, and a saved page has no use for them)."""
        self.first_load = True
        await self.context.route("**/*", self._route)
        await self.context.route_web_socket(re.compile(".*"), self._refuse_socket)

    async def _route(self, route) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.answering.add(task)
        try:
            request = route.request
            served = await self._served(request)
            if served.refused:
                self.counts[served.refused] = self.counts.get(served.refused, 0) + 1
                await route.abort("blockedbyclient")
            else:
                headers = {k.lower(): v for k, v in served.headers if k.lower() not in _FRAMING}
                await route.fulfill(status=served.status, headers=headers, body=served.body)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the page or its context closed meanwhile, or the answer failed
            try:  # a request left unanswered would hold the page until the render's deadline
                await route.abort("failed")
            except Exception:  # noqa: BLE001 - answered already, or gone
                pass
        finally:
            if task is not None:
                self.answering.discard(task)

    async def _served(self, request) -> Served:
        navigation = request.is_navigation_request()
        if self.first_load and navigation and _main_frame(request):
            self.first_load = False  # the capture, as mirror decoded it; a reload asks the server
            return self.document
        if request.method not in _READING:
            return Served(refused="write")
        headers = await request.all_headers()
        return await self.fetch(BrowserRequest(request.url, headers, navigation, request.resource_type))

    async def _refuse_socket(self, socket) -> None:
        self.counts["socket"] = self.counts.get("socket", 0) + 1
        try:
            await socket.close(code=1008, reason="refused by the archiver")
        except Exception:  # noqa: BLE001
            pass


def _main_frame(request) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - a worker's request has no frame
        return False
