"""One request hop of the client: the address rule, the host's gate, the request sent on its
host's route, the body read within its bounds, the capture written to WARC, and the answer
classified (redirect, blocked page, HTTP error)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from .. import warc
from .._types import Exchange, Reason, http_error
from .._util.text import count
from ..warc import PAGE_HEADER, Capture
from .blocked import HINT, blocked_reason
from .body import decode_head, is_htmlish, raw_reason, read_body
from .failures import failed, retry_after
from .gate import Budget, Reach
from .redact import redact_request, redact_response

if TYPE_CHECKING:
    from ..warc import CaptureWriter
    from .connect import Route
    from .host_health import HostHealth
    from .lookups import Lookups

__all__ = ["Hops"]


class Hops:
    """The request hop, as the `Client` makes it (a part of the Client: its state is the Client's)."""

    writer: CaptureWriter
    health: HostHealth
    lookups: Lookups
    timeout: float
    max_bytes: int
    in_flight: dict[str, float]
    _global: asyncio.Semaphore
    revisits: dict  # page URL -> (its saved copy's URL, location), for a re-check (a payload seen before is a revisit)
    secret_headers: frozenset[str]  # the user's --header names, lower-cased: their values never reach the WARC files
    secret_cookies: frozenset[str]  # the names of the user's cookies: a response renewing one is recorded without its value

    if TYPE_CHECKING:  # the Client's

        def _route(self, url: str) -> Route: ...
        def _proxied(self, url: str) -> bool: ...
        async def reach_of(self, url: str, timeout: float | None = None, *, page: bool = False, resource: bool = False) -> Reach | Exchange: ...

    async def _hop(
        self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None, render_for: str | None = None
    ) -> Exchange:
        try:
            return await self._hop_unguarded(url, headers, original, budget, reach, render_for)
        except (httpx.InvalidURL, UnicodeError, ValueError, IndexError) as exc:  # idna and httpx refuse the URL
            return failed(url, url, Reason.BAD_URL, f"malformed URL: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one URL must never end the run
            return failed(url, url, Reason.INTERNAL, f"internal error: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)

    async def _hop_unguarded(
        self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None, render_for: str | None
    ) -> Exchange:
        host = (urlsplit(url).netloc or "").lower()
        if self.health.refuses(url, host):
            return self.health.refused(url, host)
        _parsed(url)  # refuses a malformed URL (bad_url) before any lookup
        refusal = await self._address_rule(url, budget, reach)
        if refusal is not None:
            return refusal
        request = _Request(self._route(url), url, headers)  # made before the gate's clock starts, so the gap is the server's
        answer = await self._send(request, host, budget)
        if isinstance(answer, Exchange):
            return answer
        hop, response, body, head, truncated = answer
        self.health.answer_from(host, loopback=self._on_this_machine(url))
        hop.elapsed = time.time() - hop.started_at
        hop.status = response.status_code
        hop.content_type = response.headers.get("content-type")
        hop.etag = response.headers.get("etag")
        hop.last_modified = response.headers.get("last-modified")
        capture = request.capture(response, body, truncated, {warc.RENDER_HEADER: render_for} if render_for else {PAGE_HEADER: original})
        capture.request_headers = redact_request(capture.request_headers, self.secret_headers)
        capture.response_headers = redact_response(capture.response_headers, self.secret_cookies)
        repeated = None if truncated or response.status_code != 200 or render_for else self._repeats(original, url, body)
        if repeated is not None:  # the saved copy's bytes again: a revisit record, no second body
            hop.location, hop.revisit = self.writer.write_revisit(capture, repeated), True
        else:
            hop.location = self.writer.write(capture)
        body.close()
        if truncated:
            hop.error, hop.message = Reason.TOO_LARGE, f"body larger than {count(self.max_bytes, 'byte', thousands=True)} (decoded); refused"
            return hop
        return self._classified(hop, response, head, original, budget)

    async def _address_rule(self, url: str, budget: Budget | None, reach: Reach | None) -> Exchange | None:
        """Where the host is, first (a proxy looks names up itself): a failed lookup, or a refusal
        when it is more private than `reach` allows; None to go on."""
        if reach is None and self._proxied(url):
            return None
        where = await self.reach_of(url, budget.timeout if budget else self.timeout, page=budget is None, resource=budget is not None)
        if isinstance(where, Exchange):
            return where
        if reach is not None and where > reach:
            return failed(
                url,
                url,
                Reason.PRIVATE_ADDRESS,
                f"{urlsplit(url).hostname} is a {where.name.lower()} address; "
                "a page's redirects and resources go only to addresses no more private than the page's own "
                "(--allow-private to allow)",
                give_up=True,
            )
        return None

    async def _send(self, request: _Request, host: str, budget: Budget | None) -> Exchange | tuple:
        """The request sent at its host's turn and its body read, all within the timeout: the
        failure, or (hop, response, body, head, truncated)."""
        url = request.url
        timeout = budget.timeout if budget else self.timeout
        async with self.health.gate(url).turn(budget.semaphore if budget else self._global, resource=budget is not None) as turn:
            if self.health.refuses(url, host):  # went down while we queued
                return self.health.refused(url, host)
            hop = Exchange(url=url, final_url=url, started_at=time.time())
            if budget is None:
                self.in_flight[url] = time.monotonic()
            try:
                async with asyncio.timeout(timeout):
                    response = await request.send(turn)
                    try:
                        body, head, truncated = await read_body(response, self.max_bytes)
                    finally:
                        await response.aclose()
            except TimeoutError:
                failure = failed(url, url, Reason.TIMEOUT, f"no complete response within {timeout:g} s", started=hop.started_at)
                if budget is not None and host not in self.health.answered:  # a hanging image host costs one timeout
                    self.health.take_down(url, failure)
                return failure
            except (httpx.HTTPError, OSError) as exc:  # (ssl.SSLError too)
                return self.health.transport_failure(url, exc, hop.started_at, loopback=self._on_this_machine(url))
            finally:
                self.in_flight.pop(url, None)
        return hop, response, body, head, truncated

    def _classified(self, hop: Exchange, response, head: bytes, original: str, budget: Budget | None) -> Exchange:
        """A redirect, a blocked page, an HTTP error, or a page (whose image hosts are looked up now)."""
        status = response.status_code
        if 300 <= status < 400 and status != 304 and "location" in response.headers:
            hop.redirect_to = response.headers["location"]
            return hop
        reason = None
        if is_htmlish(hop.content_type) or status >= 400:  # an image is never a challenge page
            reason = blocked_reason(status, hop.url, original, decode_head(head, response))
        if reason:
            hop.error, hop.message = Reason.BLOCKED, f"{reason}; {HINT}"
        elif budget is None and status == 200 and is_htmlish(hop.content_type) and not hop.revisit:
            self.lookups.look_up_ahead(head, hop.url)  # its images' names, while it is extracted (a revisit's are archived)
        elif status >= 400:
            hop.error = http_error(status)
            hop.message = f"HTTP {status} {response.reason_phrase}".strip()
            hop.retry_after = retry_after(response.headers.get("retry-after"))
        return hop

    def _on_this_machine(self, url: str) -> bool:
        """Whether `url`'s server is this machine (a loopback address, not through a proxy): its
        answer says nothing of the network (`HostHealth.network_works`)."""
        return not self._proxied(url) and self.lookups.known(urlsplit(url).hostname or "") == Reach.LOOPBACK

    def _repeats(self, page: str, url: str, body) -> warc.Original | None:
        """The saved copy of `page` when this hop is at its saved address (`url`) and `body` is its
        payload byte for byte (a re-check's). Another page's saved copy is never this one's."""
        saved = self.revisits.get(page)
        if saved is None or saved[0] != url:
            return None
        saved = saved[1]
        original = warc.original(self.writer.dir.parent, saved)
        if original is None or original.url != url or warc.payload_digest(body) != original.payload_digest:
            return None
        return original


class _Request:
    """One GET on its host's route."""

    def __init__(self, route: Route, url: str, headers: dict[str, str]):
        self.route, self.url = route, url
        self.request = route.http.build_request("GET", url, headers=headers)  # refuses a malformed URL before any waiting
        parsed = self.request.url
        if parsed.username or parsed.password:  # as httpx's client sends a URL's credentials
            next(httpx.BasicAuth(parsed.username, parsed.password).auth_flow(self.request))
        self.headers = list(self.request.headers.items())

    async def send(self, turn) -> httpx.Response:
        """The response, its body left to stream. Sent on the route's transport, not by the
        client: the client would also build the redirect's next request, and a Location it
        cannot parse would lose the response (the Client follows redirects, hop by hop)."""
        if turn.holding:  # the gate waits for the request line to go out
            self.request.extensions["trace"] = turn.trace
        response = await self.route.transport.handle_async_request(self.request)
        response.request = self.request
        self.route.http.cookies.extract_cookies(response)  # kept before the body, as httpx keeps them: later requests send them
        return response

    def capture(self, response, body, truncated: bool, names: dict[str, str]) -> Capture:
        """The exchange as WARC writes it; `names` says for which page (`warc.PAGE_HEADER` or `RENDER_HEADER`)."""
        extra = {"WARC-Truncated": "length"} if truncated else {}
        return Capture(
            url=self.url,
            method="GET",
            request_headers=self.headers,
            status=response.status_code,
            reason=raw_reason(response),
            http_version=response.http_version,
            response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
            body=body,
            extra_warc_headers={**extra, **names},
            target=self.request.url.raw_path.decode("ascii"),
        )


def _parsed(url: str) -> httpx.URL:
    """`url` as httpx parses it; raises for what `httpx.Request` would refuse (an undecodable
    A-label such as `http://xn--/` parses, but its host does not decode)."""
    parsed = httpx.URL(url)
    parsed.host  # noqa: B018 - decodes the IDNA host
    return parsed
