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
    open_browser: Annotated[bool, typer.Option("--open", help="Open the reading home in a browser.")] = False,
    uploads: Annotated[
        bool,
        typer.Option(
            "--uploads",
            help="Accept pages from your browser (SingleFile's 'upload to a REST Form API') at POST /-/mirror/add, "
            "with the token in ARCHIVE/upload-token; every other route stays read-only.",
        ),
    ] = False,
) -> None:
    """Browse and search the archive offline with datasette; with --uploads, also take pages from
    your logged-in browser in one click (SingleFile)."""
    import inspect
    import threading

    import uvicorn
    from datasette.app import Datasette

    db_path = archive / DB_NAME
    with open_archive(archive, readonly=True):  # brings an older database up to the current schema where it can
        pass
    _check_port_free(host, port)
    # the plugin answers, on a loopback socket, only loopback host names and these (DNS rebinding)
    plugins = {"plugins": {"mirror": {"allow_hosts": list(allow_host or ()), "uploads": uploads}}}
    if uploads:
        _setup_uploads(archive, host, port)
    options: dict[str, object] = {"settings": SETTINGS}
    options |= {"config": plugins} if "config" in inspect.signature(Datasette).parameters else {"metadata": plugins}  # 1.0 | 0.65
    if os.access(archive, os.W_OK):
        datasette = Datasette([str(db_path)], **options)
    else:  # a read-only folder: nobody can change the file, and SQLite needs no -shm beside it
        datasette = Datasette(immutables=[str(db_path)], **options)
    app_ = datasette.app()
    home = f"http://{_browsable(host)}:{port}/"
    err.print(f"serving {safe(db_path)} at {safe(home)} (search: {safe(home)}-/mirror/search); Ctrl-C stops")
    if open_browser:
        threading.Timer(1.0, _open_in_browser, [home]).start()
    try:
        uvicorn.run(app_, host=host, port=port, log_level="warning")
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror})")


def _setup_uploads(archive: Path, host: str, port: int) -> None:
    """The token made (or read), and how to point SingleFile at this server, said once."""
    from .._util.loopback import is_loopback_address
    from ..plugin.uploads import TOKEN_FILE, UPLOAD_PATH, upload_token

    if not os.access(archive, os.W_OK):
        fail(f"--uploads: the archive folder {archive} cannot be written", code=2)
    try:
        token = upload_token(archive)
    except OSError as exc:
        fail(f"--uploads: cannot make {archive / TOKEN_FILE} ({exc.strerror or exc})")
    where = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}{UPLOAD_PATH}"
    err.print(
        f"uploads on: {safe(where)} takes pages from your browser, with the token in {safe(archive / TOKEN_FILE)}\n"
        "  SingleFile: Options > Destinations > 'upload to a REST Form API':\n"
        f"    URL {safe(where)}\n    authorization token {safe(token)}\n"
        "    file field name: file    URL field name: url\n"
        "  then 'Save page with SingleFile' on a page you are logged in to; it appears in the reader as added by you"
    )
    if not is_loopback_address(host):
        err.print(
            f"[yellow]warning:[/] serving on {safe(host)}: other machines can reach the upload route "
            "(the token travels in clear over plain http; keep it to a network you trust)"
        )


def _browsable(host: str) -> str:
    """The address a browser on this machine reaches the server at: a wildcard one (0.0.0.0, ::)
    is no address to ask; an IPv6 one goes in brackets."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _open_in_browser(url: str) -> None:
    """The reading home in the user's browser, or a line saying that none could be opened (a
    server, a container, an SSH session: `webbrowser` finds no browser and says nothing)."""
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        err.print(f"[yellow]no browser could be opened here:[/] open {safe(url)} in yours")


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
