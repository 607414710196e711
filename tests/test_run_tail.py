"""The end of a run (issue 42 item 4): a site's images take turns with its pages at the host's
gate instead of all queueing after the last page, and the run shows them: a second bar on a
terminal, a line when the pages are done and their resources are not, a row in the summary.
Servers on 127.0.0.x; speed itself is bench/throughput.py's (its tail, `tail_seconds`)."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from mirror.cli.progress import FetchReporter
from mirror.fetch import FetchOptions, run
from mirror.http.gate import HostGate
from mirror.seeds import links_from_urls
from mirror.store import Archive

from .webserver import PNG, article


def test_pages_and_resources_take_turns_at_a_host():
    """Page requests queued first, a page's images queued after them: the host's next turns
    alternate between the two queues (first come, first served within each)."""

    async def go() -> list[str]:
        gate, shared, order = HostGate(per_host=1, delay=0), asyncio.Semaphore(8), []

        async def request(name: str, resource: bool) -> None:
            async with gate.turn(shared, resource=resource):
                order.append(name)
                await asyncio.sleep(0)

        holder = asyncio.Event()

        async def first() -> None:
            async with gate.turn(shared):
                order.append("page0")
                await holder.wait()

        tasks = [asyncio.create_task(first())]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(request(f"page{n}", False)) for n in range(1, 4)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(request(f"image{n}", True)) for n in range(1, 4)]
        await asyncio.sleep(0)
        holder.set()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(go()) == ["page0", "image1", "page1", "image2", "page2", "image3", "page3"]


def test_a_stopped_waiter_gives_its_turn_on():
    async def go() -> list[str]:
        gate, shared, order = HostGate(per_host=1, delay=0), asyncio.Semaphore(8), []
        holder = asyncio.Event()

        async def request(name: str, resource: bool, hold: bool = False) -> None:
            async with gate.turn(shared, resource=resource):
                order.append(name)
                if hold:
                    await holder.wait()

        first = asyncio.create_task(request("page0", False, hold=True))
        await asyncio.sleep(0)
        stopped = asyncio.create_task(request("image1", True))
        waiting = asyncio.create_task(request("page1", False))
        await asyncio.sleep(0)
        stopped.cancel()
        holder.set()
        await asyncio.gather(first, waiting, stopped, return_exceptions=True)
        return order

    assert asyncio.run(go()) == ["page0", "page1"]


def pictured(web, name: str, images: int) -> str:
    for n in range(images):
        web.add(f"/{name}-{n}.png", PNG, content_type="image/png")
    body = article(f"带图 {name}", "".join(f'<img src="/{name}-{n}.png" alt="图{n}">' for n in range(images)))
    return web.add(f"/{name}", body)


def fetch_with(reporter: FetchReporter, tmp_path, urls: list[str], **options):
    with Archive(tmp_path / "archive") as archive, archive.lock():
        archive.record_inventory(links_from_urls(urls))
        summary = run(
            archive,
            FetchOptions(**{"delay": 0.2, "retries": 0, "workers": 1, **options}),
            on_page=reporter.page,
            on_start=reporter.start,
            on_tail=reporter.tail,
        )
    reporter.stop()
    return summary


def test_piped_the_run_says_its_pages_are_done_and_its_images_are_not(tmp_path, web):
    url = pictured(web, "tail", 3)
    out = io.StringIO()
    summary = fetch_with(FetchReporter(Console(file=out, width=200)), tmp_path, [url])
    lines = out.getvalue().splitlines()
    assert lines[0] == "fetching 1 page" and lines[1].startswith("[1/1] ok 200 ")
    assert lines[2].startswith("1 page done; their images and stylesheets are still being fetched"), lines
    assert summary.resources.asked == 3 and summary.resources.done == 3 and summary.resources.failed == 0

    from mirror.cli.progress import summary_table

    table = io.StringIO()
    Console(file=table, width=200).print(summary_table(summary))
    row = next(line for line in table.getvalue().splitlines() if "images and stylesheets fetched" in line)
    assert row.rstrip(" │|").endswith("3"), row


def test_on_a_terminal_the_resources_have_a_bar_of_their_own(tmp_path, web):
    urls = [pictured(web, f"bar{n}", 2) for n in range(2)]
    out = io.StringIO()
    fetch_with(FetchReporter(Console(file=out, force_terminal=True, width=160)), tmp_path, urls)
    last = out.getvalue().rsplit("\r", 1)[-1]
    assert "fetch" in last and "2/2" in last and "resources" in last and "4/4" in last, last
