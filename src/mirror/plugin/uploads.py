"""`POST /-/mirror/add`: a page from the user's logged-in browser, in one click, as SingleFile's
"upload to a REST Form API" destination sends it: `multipart/form-data`, the page in the field
`file` (`SingleFile.html`, text/html), its URL in the field `url`, `Authorization: Bearer TOKEN`;
it wants a 200 or 201 with JSON back (SingleFile's `rest-form-api/index.js`).

The only route of the plugin that writes, and only when asked (`mirror serve --uploads`, or the
plugin setting `uploads: true`). What guards it:

- The token: made on first use, kept in `ARCHIVE/upload-token` (mode 0600), compared in constant
  time. A request without it, or with another, is a 401 before any of its body is read: nothing
  is stored.
- Size: the body is streamed, the page part straight to a file in the archive folder, never held
  in memory; past `MAX_UPLOAD` bytes (declared or counted) the answer is a 413 and the file is
  removed. Other fields are held only up to 64 KB.
- Origins: archived pages are served sandboxed (an opaque origin, `null`) and other web pages
  have their own; a request from either is refused (403), and no answer gives them an
  `Access-Control-Allow-Origin`. Browser extensions' requests (`chrome-extension://`,
  `moz-extension://`, `safari-web-extension://`) and clients that send no Origin (curl, scripts)
  may ask: an extension cannot be a web page's tool, a page cannot claim an extension's origin,
  and the token is still needed. An extension without host permissions sends a CORS preflight
  first: it is answered for extension origins only.
- The DNS-rebinding guard (`_origin.guard`) applies as to every route.

The write is `mirror add`'s (`saved.add`), under the archive's lock: an upload waits a few
seconds for another upload, and is refused with a 503 while a `mirror fetch` writes.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..saved.read import MAX_SAVED_BYTES

if TYPE_CHECKING:
    from ..extract.pool import ExtractionPool

__all__ = ["MAX_UPLOAD", "TOKEN_FILE", "UPLOAD_PATH", "answer_upload", "upload_token", "uploads_enabled"]

UPLOAD_PATH = "/-/mirror/add"
TOKEN_FILE = "upload-token"
SETTING = "uploads"
MAX_UPLOAD = MAX_SAVED_BYTES + (1 << 20)  # a saved page as large as `mirror add` takes, and the form around it
_MAX_FIELD = 65536
_EXTENSION_SCHEMES = ("chrome-extension://", "moz-extension://", "safari-web-extension://")
_SHORTEST_TOKEN = 16
_LOCK_WAIT = 10.0  # seconds an upload waits for another writer (an upload) before a 503
_pool: ExtractionPool | None = None
_pool_lock = threading.Lock()


def uploads_enabled(datasette) -> bool:
    return bool((datasette.plugin_config("mirror") or {}).get(SETTING))


def upload_token(archive_dir: Path) -> str:
    """The archive's upload token, made on first use (0600: only the user reads it)."""
    path = Path(archive_dir) / TOKEN_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="ascii", errors="replace").strip()
        if len(token) >= _SHORTEST_TOKEN:
            return token
        path.unlink()  # emptied or cut short by hand: a token anyone could guess is no token
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    token = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token


async def answer_upload(datasette, scope, receive, send, headers: dict[str, str]) -> None:
    """The whole answer to a request for UPLOAD_PATH (any method)."""
    origin = headers.get("origin")
    extension = origin is not None and origin.startswith(_EXTENSION_SCHEMES)
    cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")] if origin is not None and extension else []
    if not uploads_enabled(datasette):
        return await _json(send, 404, {"ok": False, "error": "uploads are off: start the server with mirror serve --uploads"}, cors)
    if origin is not None and not extension:
        return await _json(send, 403, {"ok": False, "error": "web pages cannot add to this archive"}, [])
    method = scope.get("method")
    if method == "OPTIONS":
        allow = [(b"access-control-allow-methods", b"POST"), (b"access-control-allow-headers", b"authorization, content-type, accept")]
        return await _json(send, 204, None, cors + allow + [(b"access-control-max-age", b"600")])
    if method != "POST":
        return await _json(send, 405, {"ok": False, "error": "POST a page here (multipart/form-data: file, url)"}, cors + [(b"allow", b"POST")])
    folder = await _archive_folder(datasette)
    if folder is None:
        return await _json(send, 404, {"ok": False, "error": "no mirror archive is attached to this datasette"}, cors)
    token = upload_token(folder)
    scheme, _, given = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip() or not hmac.compare_digest(given.strip().encode(), token.encode()):
        return await _json(send, 401, {"ok": False, "error": "no upload token, or not this archive's"}, cors + [(b"www-authenticate", b"Bearer")])
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_UPLOAD:
        return await _json(send, 413, _too_large(), cors + [(b"connection", b"close")])
    form = _Form(folder, headers.get("content-type", ""))
    if form.error:
        return await _json(send, 400, {"ok": False, "error": form.error}, cors)
    try:
        error = await form.read(receive)
        if error is not None:
            status, message = error
            extra = [(b"connection", b"close")] if status == 413 else []
            return await _json(send, status, {"ok": False, "error": message} if status != 413 else _too_large(), cors + extra)
        status, answer = await asyncio.to_thread(_add, folder, form)
        await _json(send, status, answer, cors)
    finally:
        form.discard()


def _too_large() -> dict:
    return {"ok": False, "error": f"larger than {MAX_UPLOAD:,} bytes: not added"}


async def _archive_folder(datasette) -> Path | None:
    from ._common import archive_name

    name = await archive_name(datasette)
    if name is None:
        return None
    return Path(datasette.databases[name].path).parent


_NOT_MULTIPART = "send the page as multipart/form-data (fields: file, url)"
_NO_FILE = "no page in the form's field `file` (SingleFile: set the file field name to file)"


@dataclass
class _Part:
    """The part the parser is in: its header being read, and its field's name once they are."""

    header: bytes = b""
    value: bytes = b""
    headers: dict[bytes, bytes] = field(default_factory=dict)
    name: str | None = None
    too_large: str | None = None  # why the form is refused: a field past _MAX_FIELD


class _Form:
    """The multipart body, streamed: the `file` part into a file of the archive folder, `url` (and
    any other small field) into memory, at most MAX_UPLOAD bytes in all."""

    def __init__(self, folder: Path, content_type: str):
        from python_multipart.multipart import parse_options_header

        self.folder = folder
        self.error: str | None = None
        self.fields: dict[str, bytearray] = {}
        self.file: Path | None = None
        self.file_name = "upload.html"
        self._out: BinaryIO | None = None
        kind, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        if kind != b"multipart/form-data" or not boundary:
            self.error = _NOT_MULTIPART
        self.boundary = boundary

    async def read(self, receive) -> tuple[int, str] | None:
        """The body read to its end; (status, message) when it cannot be taken."""
        from python_multipart.multipart import MultipartParser

        if not self.boundary:
            return 400, _NOT_MULTIPART
        state = _Part()

        def on_header_field(data: bytes, start: int, end: int) -> None:
            state.header += data[start:end]

        def on_header_value(data: bytes, start: int, end: int) -> None:
            state.value += data[start:end]

        def on_header_end() -> None:
            state.headers[state.header.lower()] = state.value
            state.header = state.value = b""

        def on_headers_finished() -> None:
            from python_multipart.multipart import parse_options_header

            _, options = parse_options_header(state.headers.get(b"content-disposition", b""))
            name = options.get(b"name", b"").decode("utf-8", "replace")
            state.name, state.headers = name, {}
            if name == "file":
                self.file_name = os.path.basename(options.get(b"filename", b"upload.html").decode("utf-8", "replace")) or "upload.html"
                self._open()
            else:
                self.fields.setdefault(name, bytearray())

        def on_part_data(data: bytes, start: int, end: int) -> None:
            if state.name is None:  # (the parser gives a part's data after its headers)
                raise ValueError("a part's data before its headers")
            if state.name == "file":
                if self._out is None:
                    raise ValueError("the page part has no file to go to")
                self._out.write(data[start:end])
            else:
                value = self.fields[state.name]
                if len(value) + end - start > _MAX_FIELD:
                    state.too_large = f"the form's field {state.name!r} is longer than {_MAX_FIELD:,} bytes"
                    return
                value += data[start:end]

        parser = MultipartParser(
            self.boundary,
            {
                "on_header_field": on_header_field,
                "on_header_value": on_header_value,
                "on_header_end": on_header_end,
                "on_headers_finished": on_headers_finished,
                "on_part_data": on_part_data,
            },
        )
        received = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return 400, "the upload was cut off"
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > MAX_UPLOAD:
                return 413, "too large"
            try:
                parser.write(chunk)
            except Exception as exc:  # noqa: BLE001 - python-multipart's parse errors: a malformed form
                return 400, f"not a multipart form: {exc}"
            if state.too_large:
                return 413, state.too_large
            if not message.get("more_body", False):
                break
        try:
            parser.finalize()
        except Exception as exc:  # noqa: BLE001
            return 400, f"not a complete multipart form: {exc}"
        if self._out is not None:
            self._out.close()
        if self.file is None:
            return 400, _NO_FILE
        return None

    def _open(self) -> None:
        if self._out is not None:  # one page an upload
            raise ValueError("more than one file field")
        uploads = self.folder / ".uploads"
        uploads.mkdir(mode=0o700, exist_ok=True)
        descriptor, name = tempfile.mkstemp(dir=uploads, suffix=".part")
        self.file, self._out = Path(name), os.fdopen(descriptor, "wb")

    @property
    def url(self) -> str | None:
        value = self.fields.get("url")
        return value.decode("utf-8", "replace").strip() or None if value else None

    def discard(self) -> None:
        if self._out is not None and not self._out.closed:
            self._out.close()
        if self.file is not None:
            self.file.unlink(missing_ok=True)


def _add(folder: Path, form: _Form) -> tuple[int, dict]:
    """`mirror add`'s write, in a thread; extraction in a process of its own (a deadline, and the server's loop left free)."""
    from ..saved.add import add_saved
    from ..saved.read import SavedPageError, read_saved
    from ..store import Archive
    from ..store.folder import ArchiveError

    if form.file is None:  # (`_Form.read` answered 400)
        return 400, {"ok": False, "error": _NO_FILE}
    try:
        with form.file.open("rb") as stream:
            page = read_saved(stream, form.file_name, form.url)
    except SavedPageError as exc:
        return 400, {"ok": False, "error": str(exc)}
    try:
        with Archive(folder, create=False) as archive, archive.lock(wait=_LOCK_WAIT):
            added = add_saved(archive, page, lambda location, url: _extract(str(folder), location, url), "upload")
    except ArchiveError as exc:
        return 503, {"ok": False, "error": f"not added: {exc}"}
    except OSError as exc:
        return 507, {"ok": False, "error": f"not added: the archive cannot be written ({exc.strerror or exc})"}
    return 201, {"ok": True, **added.as_dict(), "reader": f"/-/mirror/page/{added.id}" if added.id is not None else None}


def _extract(folder: str, location, url: str):
    global _pool
    from ..extract.pool import extraction_pool, safe_extract

    with _pool_lock:
        if _pool is None:
            _pool = extraction_pool(1)
    return _pool.submit(safe_extract, folder, location, url).result()


async def _json(send, status: int, body: dict | None, headers: list[tuple[bytes, bytes]]) -> None:
    data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    start = [(b"content-type", b"application/json; charset=utf-8"), (b"content-length", str(len(data)).encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": start + headers})
    await send({"type": "http.response.body", "body": data})
