"""`mirror serve`: the archive browsed and searched offline, in datasette (loaded only here)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..store import DB_NAME
from ._common import err, fail, open_archive, safe
from ._options import ArchiveDir

# datasette's settings: a table search that 5,000 pages match takes more than its default 1 s; and
# it suggests facets by trying every column on every table page: 6-8 s a page (and a table search)
# at 100,000 pages, where the configured facets take 0.3-0.6 s
SETTINGS = {"sql_time_limit_ms": 5000, "suggest_facets": False}


def serve(
    archive: ArchiveDir = Path("archive"),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8001,
    host: Annotated[
        str, typer.Option(help="Address to listen on. On a loopback address only requests for localhost names are answered.")
    ] = "127.0.0.1",
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", help="Also answer requests for this host name (repeatable), e.g. behind a proxy.")
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the search page in a browser.")] = False,
) -> None:
    """Browse and search the archive offline with datasette."""
    import inspect
    import threading
    import webbrowser

    import uvicorn
    from datasette.app import Datasette

    db_path = archive / DB_NAME
    with open_archive(archive, readonly=True):  # brings an older database up to the current schema where it can
        pass
    _check_port_free(host, port)
    # the plugin answers, on a loopback socket, only loopback host names and these (DNS rebinding)
    plugins = {"plugins": {"mirror": {"allow_hosts": list(allow_host or ())}}}
    options: dict[str, object] = {"settings": SETTINGS}
    options |= {"config": plugins} if "config" in inspect.signature(Datasette).parameters else {"metadata": plugins}  # 1.0 | 0.65
    if os.access(archive, os.W_OK):
        datasette = Datasette([str(db_path)], **options)
    else:  # a read-only folder: nobody can change the file, and SQLite needs no -shm beside it
        datasette = Datasette(immutables=[str(db_path)], **options)
    app_ = datasette.app()
    url = f"http://{host}:{port}/-/mirror/search"
    err.print(f"serving {safe(db_path)} at http://{safe(host)}:{port}/ (search: {safe(url)}); Ctrl-C stops")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, [url]).start()
    try:
        uvicorn.run(app_, host=host, port=port, log_level="warning")
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror})")


def _check_port_free(host: str, port: int) -> None:
    """uvicorn logs a bind error and exits 3; say it our way before starting."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})", code=2)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})")
