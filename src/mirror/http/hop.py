"""One request hop of the client: the address rule, the host's gate, the request sent (through
httpx, or httpcore's pool directly for a page's resources), the body read within its bounds, the
capture written to WARC, and the answer classified (redirect, blocked page, HTTP error)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpcore
import httpx

from .. import warc
from .._types import Exchange, Reason, http_error
from ..warc import PAGE_HEADER, Capture
from . import direct as _direct
from .blocked import HINT, blocked_reason
from .body import decode_head, is_htmlish, raw_reason, read_body
from .failures import failed, retry_after
from .gate import Budget, Reach

if TYPE_CHECKING:
    from ..warc import CaptureWriter
    from .health import HostHealth
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
    _timeouts: dict
    _pools: _direct.Pools
    _cookies: object
    _resource_headers: dict
    revisits: dict  # page URL -> (its saved copy's URL, location), for a re-check (a payload seen before is a revisit)

    def _http(self, url: str) -> httpx.AsyncClient: ...
    def _proxied(self, url: str) -> bool: ...
    async def reach_of(self, url: str, timeout: float | None = None, *, page: bool = False, resource: bool = False) -> Reach | Exchange: ...

    async def _hop(self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None,
                   render_for: str | None = None) -> Exchange:
        try:
            return await self._hop_unguarded(url, headers, original, budget, reach, render_for)
        except (httpx.InvalidURL, UnicodeError, ValueError, IndexError) as exc:  # idna and httpx refuse the URL
            return failed(url, url, Reason.BAD_URL, f"malformed URL: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one URL must never end the run
            return failed(url, url, Reason.INTERNAL, f"internal error: {type(exc).__name__}: {str(exc)[:300]}", give_up=True)

    async def _hop_unguarded(self, url: str, headers: dict[str, str], original: str, budget: Budget | None, reach: Reach | None,
                             render_for: str | None) -> Exchange:
        host = (urlsplit(url).netloc or "").lower()
        if self.health.refuses(url, host):
            return self.health.refused(url, host)
        checked = _parsed(url)  # refuses a malformed URL (bad_url) before any lookup
        parsed = checked if reach is not None else None  # (resources may take the direct path)
        refusal = await self._address_rule(url, budget, reach)
        if refusal is not None:
            return refusal
        http = self._http(url)  # set up before the gate's clock starts, so the gap is the server's
        pool = self._direct_pool(http, host, parsed, headers) if parsed is not None else None
        request = _Request(http, url, headers, pool, parsed, self._direct_headers(http, host, parsed) if pool is not None else None)
        answer = await self._send(request, host, budget)
        if isinstance(answer, Exchange):
            return answer
        hop, response, body, head, truncated = answer
        self.health.answer_from(host)
        hop.elapsed = time.time() - hop.started_at
        hop.status = response.status_code
        hop.content_type = response.headers.get("content-type")
        hop.etag = response.headers.get("etag")
        hop.last_modified = response.headers.get("last-modified")
        capture = request.capture(response, body, truncated, {warc.RENDER_HEADER: render_for} if render_for else {PAGE_HEADER: original})
        repeated = None if truncated or response.status_code != 200 or render_for else self._repeats(original, url, body)
        if repeated is not None:  # the saved copy's bytes again: a revisit record, no second body
            hop.location, hop.revisit = self.writer.write_revisit(capture, repeated), True
        else:
            hop.location = self.writer.write(capture)
        body.close()
        if truncated:
            hop.error, hop.message = Reason.TOO_LARGE, f"body larger than {self.max_bytes:,} bytes (decoded); refused"
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
            return failed(url, url, Reason.PRIVATE_ADDRESS, f"{urlsplit(url).hostname} is a {where.name.lower()} address; "
                          "a page's redirects and resources go only to addresses no more private than the page's own "
                          "(--allow-private to allow)", give_up=True)
        return None

    async def _send(self, request: _Request, host: str, budget: Budget | None) -> Exchange | tuple:
        """The request sent at its host's turn and its body read, all within the timeout: the
        failure, or (hop, response, body, head, truncated)."""
        url = request.url
        timeout = budget.timeout if budget else self.timeout
        async with self.health.gate(url).turn(budget.semaphore if budget else self._global) as turn:
            if self.health.refuses(url, host):  # went down while we queued
                return self.health.refused(url, host)
            hop = Exchange(url=url, final_url=url, started_at=time.time())
            if budget is None:
                self.in_flight[url] = time.monotonic()
            try:
                async with asyncio.timeout(timeout):
                    response = await request.send(turn, self._timeouts)
                    try:
                        body, head, truncated = await read_body(response, self.max_bytes)
                    finally:
                        await response.aclose()
            except TimeoutError:
                failure = failed(url, url, Reason.TIMEOUT, f"no complete response within {timeout:g} s", started=hop.started_at)
                if budget is not None and host not in self.health.answered:  # a hanging image host costs one timeout
                    self.health.take_down(url, failure)
                return failure
            except httpx.HTTPError as exc:
                return self.health.transport_failure(url, exc, hop.started_at)
            except OSError as exc:  # ssl.SSLError too
                return failed(url, url, Reason.CONNECT, str(exc) or type(exc).__name__, started=hop.started_at)
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

    def _direct_pool(self, http: httpx.AsyncClient, host: str, parsed: httpx.URL, headers: dict[str, str]) -> httpcore.AsyncConnectionPool | None:
        """The pool a resource request may go to without httpx's models (see `mirror.http.direct`):
        none when cookies, a proxy, credentials in the URL, extra headers or a Host header of
        the user's (--header) are involved."""
        if (headers or self._cookies is not None or parsed.userinfo or parsed.scheme not in ("http", "https")
                or len(http.cookies.jar) or "host" in http.headers):
            return None
        return self._pools.get(parsed, host) if _direct.unproxied(http, parsed) else None

    def _direct_headers(self, http: httpx.AsyncClient, host: str, parsed: httpx.URL) -> tuple[list[tuple[bytes, bytes]], list[tuple[str, str]]]:
        """The headers `http` would send to `parsed`'s host, raw and as written to WARC; the same for every resource of a host."""
        key = (host, parsed.netloc)
        if key not in self._resource_headers:
            raw = [(b"Host", parsed.netloc), *http.headers.raw]
            self._resource_headers[key] = (raw, list(httpx.Headers(raw).items()))
        return self._resource_headers[key]


class _Request:
    """One GET, by httpx or straight to httpcore's pool (`pool`, with `direct` headers)."""

    def __init__(self, http: httpx.AsyncClient, url: str, headers: dict[str, str], pool, parsed: httpx.URL | None, direct):
        self.http, self.url, self.pool, self.parsed = http, url, pool, parsed
        if pool is None:
            self.request = http.build_request("GET", url, headers=headers)  # refuses a malformed URL before any waiting
            self.headers = list(self.request.headers.items())
        else:
            self.raw_headers, self.headers = direct

    async def send(self, turn, timeouts: dict):
        if self.pool is None:
            if turn.holding:  # the gate waits for the request line to go out
                self.request.extensions["trace"] = turn.trace
            return await self.http.send(self.request, stream=True)
        extensions = {"timeout": timeouts, "trace": turn.trace} if turn.holding else {"timeout": timeouts}
        response = await _direct.send(self.pool, self.parsed, self.raw_headers, extensions)
        if "set-cookie" in response.headers:  # kept as httpx keeps it, before the body: later requests send it
            self.http.cookies.extract_cookies(httpx.Response(response.status_code, headers=response.headers.raw, request=httpx.Request("GET", self.parsed)))
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
            target=(self.request.url if self.pool is None else self.parsed).raw_path.decode("ascii"),
        )


def _parsed(url: str) -> httpx.URL:
    """`url` as httpx parses it; raises for what `httpx.Request` would refuse (an undecodable
    A-label such as `http://xn--/` parses, but its host does not decode)."""
    parsed = httpx.URL(url)
    parsed.host  # noqa: B018 - decodes the IDNA host
    return parsed
