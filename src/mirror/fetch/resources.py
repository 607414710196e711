"""A page's resources: the images its article shows and what its stylesheets load, each asked
for once a run, on a budget of their own, from addresses no more private than the page's."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .._types import Exchange, Reason
from ..http.client import Client
from ..http.gate import Budget, Reach
from .pages import with_retries
from .summary import Resources

__all__ = ["MAX_IMAGES", "Seen", "fetch_images", "resources_tail"]

MAX_IMAGES = 300  # fetched for one page (a page of real galleries shows a few dozen)


@dataclass
class Seen:
    """What a page's resources need not be asked for again: archived (by any page, in any run),
    failed in this run in a way no retry mends (a 404 stylesheet that every page of a site
    links to), or being fetched right now for another page (the pages of one site arrive
    together and share their stylesheets and logos). Each is asked for once a run."""

    archived: set[str]
    failed: dict[str, Exchange] = field(default_factory=dict)
    pending: dict[tuple[str, Reach], asyncio.Future[Exchange]] = field(default_factory=dict)


async def fetch_images(
    client: Client, budget: Budget, images: list[str], page_reach: Reach, seen: Seen, counts: Resources | None = None
) -> list[Exchange]:
    """Capture an article's images on the resource budget, from addresses no more private than the page's.

    Returns the outcome of each image not archived before, in order: fetched, or shared with
    the page that fetched it in this run. `seen` grows as outcomes arrive; `counts` counts the
    requests made.
    A page's images are asked for together: the budget's slots and each host's gate pace them,
    and a page with many images on a slow host takes one wait, not one per image.
    """

    async def one(image: str) -> Exchange | None:
        if image in seen.archived:  # by a page that finished it since this list was made
            return None
        if image in seen.failed:
            return seen.failed[image]
        key = (image, page_reach)  # what a page may fetch depends on how private its own address is
        if key in seen.pending:
            return await asyncio.shield(seen.pending[key])  # a stop cancels this wait, not the fetch
        outcome = seen.pending[key] = asyncio.get_running_loop().create_future()
        if counts is not None:
            counts.asked += 1
        try:
            final = (await with_retries(lambda: client.get(image, budget=budget, reach=page_reach), budget.retries, budget.backoff, budget.timeout))[
                -1
            ]
            if counts is not None:
                counts.done += 1
                counts.failed += not final.ok
            if final.ok:
                seen.archived.add(image)
            elif not final.retryable and final.error != Reason.PRIVATE_ADDRESS:  # that one depends on the page
                seen.failed[image] = final
            outcome.set_result(final)
            return final
        except Exception as exc:  # those waiting fail as this page's images do
            outcome.set_exception(exc)
            outcome.exception()  # retrieved: it is raised in this page's task
            raise
        finally:
            del seen.pending[key]
            if not outcome.done():
                outcome.cancel()  # a stop: those waiting stop too

    found = await asyncio.gather(*(one(image) for image in dict.fromkeys(images) if image not in seen.archived))
    return [exchange for exchange in found if exchange is not None]


async def resources_tail(client: Client, image_tasks: list[asyncio.Task], done: list[asyncio.Task], grace: float) -> float:
    """The pages are all recorded: their resources get `grace` seconds more; then the host names
    still waiting for an answer are given up (`deferred`: asked again by the next run), and the
    resources already under way finish. A resolver that drops
    queries never holds the end of a run for long. Returns how long it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + grace
    while image_tasks:  # more are added while they run
        batch, image_tasks[:] = list(image_tasks), []
        done += batch
        _, pending = await asyncio.wait(batch, timeout=max(0.0, deadline - loop.time()))
        if pending:
            client.defer_lookups()
            await asyncio.gather(*pending)
    client.defer_lookups(False)  # the browser pass looks names up again (its address rule needs them)
    return loop.time() - started
