"""How a request failed, in our words (`Reason`), and when to try it again."""

from __future__ import annotations

import email.utils
import errno
import random
import time

import httpx

from .._types import Exchange, Reason

__all__ = ["backoff_delay", "classify_error", "errno_of", "failed", "retry_after"]


def failed(
    url: str, final: str, category: str, message: str, redirects: list[str] | None = None, started: float | None = None, *, give_up: bool = False
) -> Exchange:
    now = time.time()
    return Exchange(
        url=url,
        final_url=final,
        error=category,
        message=message,
        redirects=redirects or [],
        started_at=started or now,
        elapsed=now - (started or now),
        give_up=give_up,
    )


def classify_error(exc: httpx.HTTPError) -> tuple[Reason, str]:
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if errno_of(exc) in (errno.EMFILE, errno.ENFILE):  # anyio says "All connection attempts failed"
        return Reason.CONNECT, f"cannot connect: too many open files: mirror ran out of file descriptors (ulimit -n): {text}"
    if isinstance(exc, httpx.TimeoutException):
        return Reason.TIMEOUT, f"timed out: {text}"
    if isinstance(exc, httpx.ConnectError):
        if any(
            s in lowered for s in ("name or service", "nodename nor servname", "getaddrinfo", "temporary failure in name", "no address associated")
        ):
            return Reason.DNS, f"host name lookup failed: {text}"  # (`HostHealth.dns_failure` says whether it was not found)
        if "ssl" in lowered or "certificate" in lowered:
            return Reason.TLS, f"TLS failure: {text}"
        return Reason.CONNECT, f"cannot connect: {text}"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return Reason.RESET, f"connection broken: {text}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return Reason.PROTOCOL, f"bad response: {text}"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return Reason.SCHEME, text
    if isinstance(exc, httpx.ProxyError):
        return Reason.PROXY, f"proxy failure: {text}"
    return Reason.HTTP_ERROR, text


def errno_of(exc: BaseException | None) -> int | None:
    """The OS error code behind an httpx error (httpx wraps OSError / gaierror)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno is not None:
            return exc.errno
        exc = exc.__cause__ or exc.__context__
    return None


def retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base: float, retry_after: float | None, cap: float) -> float:
    """Exponential backoff with jitter; a server's Retry-After wins (capped)."""
    if retry_after is not None:
        return min(retry_after, cap)
    return min(base * (2**attempt) + random.uniform(0, base / 2), cap)
