"""Pages as the user's browser saved them: what `mirror add` and `mirror serve --uploads` read.

Three kinds, told apart by their bytes, never by the file's name:

- SingleFile's HTML: one file, its images, stylesheets and fonts inline as `data:` URIs. Its
  first comment, which SingleFile writes at the top of every page it saves, names the page's URL
  and when it was saved (`Page saved with SingleFile` / ` url: …` / ` saved date: …`).
- Chromium's MHTML ("Save as: Webpage, single file", or CDP's `Page.captureSnapshot`): a MIME
  `multipart/related` message whose `Snapshot-Content-Location` is the page's URL; each part (the
  document, its images, stylesheets and frames) keeps its own URL in `Content-Location`. Read with
  the standard library's `email` package.
- Any other saved `.html`: its URL must be given (`--url`).

What a file says about its URL is a claim: the page is recorded as added by the user (`source`
`added`), with the file's name and headers, and the reader says so.
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import BinaryIO

from ..urls import normalize, web_url

__all__ = ["MAX_SAVED_BYTES", "Part", "SavedPage", "SavedPageError", "read_saved"]

# a saved page is read back whole (its extraction, its snapshot): at most what a capture is read back with
MAX_SAVED_BYTES = 100_000_000
_HEAD = 65536  # SingleFile's comment is at the top; an MHTML's headers in its first lines
_SINGLEFILE = re.compile(rb"<!--\s*(Page saved with SingleFile|Archive processed by SingleFile)\b(.*?)-->", re.S)
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,40}):\s?(.*?)\s*$")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
_JS_DATE = re.compile(r"\w{3} (\w{3} \d{1,2} \d{4} \d\d:\d\d:\d\d) GMT([+-]\d{4})")


class SavedPageError(ValueError):
    """The file cannot be added: the message says why and what to do."""


@dataclass
class Part:
    """One resource an MHTML file carries beside its document: an image, a stylesheet, a frame."""

    url: str
    content_type: str
    body: bytes


@dataclass
class SavedPage:
    url: str  # the page's URL, as the file (or --url) says
    kind: str  # "singlefile", "mhtml" or "html"
    document: bytes  # the page itself, as saved
    content_type: str  # the document's, with its charset when the file said one
    file_name: str
    saved_at: str | None = None  # when the browser saved it (ISO, UTC), when the file says
    headers: dict[str, str] = field(default_factory=dict)  # SingleFile's comment fields, an MHTML's top headers
    parts: list[Part] = field(default_factory=list)

    def provenance(self) -> dict[str, object]:
        """What the reader shows of where this copy came from."""
        tool = {"singlefile": "SingleFile", "mhtml": "MHTML (Chromium)", "html": "a saved HTML file"}[self.kind]
        return {"file": self.file_name, "format": tool, "saved_at": self.saved_at, "headers": self.headers}


def read_saved(stream: BinaryIO, file_name: str, url: str | None = None) -> SavedPage:
    """The saved page in `stream` (its name for the record); `url` (--url, a form's `url` field)
    wins over what the file says. Raises SavedPageError."""
    file_name = _CONTROLS.sub("?", file_name)[:300]  # it goes into WARC headers: one line, always
    data = stream.read(MAX_SAVED_BYTES + 1)
    if len(data) > MAX_SAVED_BYTES:
        raise SavedPageError(f"{file_name}: larger than {MAX_SAVED_BYTES:,} bytes; not added")
    if not data.strip():
        raise SavedPageError(f"{file_name}: empty file")
    head = data[:_HEAD]
    if _is_mhtml(head):
        page = _mhtml(data, file_name)
    elif (comment := _SINGLEFILE.search(head)) is not None:
        page = _singlefile(data, comment, file_name)
    elif re.search(rb"<(!doctype html|html|head|body|p|div|article)\b", head[:4096], re.I):
        page = SavedPage(url="", kind="html", document=data, content_type="text/html", file_name=file_name)
    else:
        raise SavedPageError(f"{file_name}: neither an HTML page nor an MHTML file")
    claimed = url or page.url
    if not claimed:
        raise SavedPageError(f"{file_name}: the file does not say which page it is: give its address with --url URL")
    page.url = _page_url(claimed, file_name)
    return page


def _page_url(url: str, file_name: str) -> str:
    absolute = web_url(url.strip())
    if absolute is None:
        raise SavedPageError(f"{file_name}: {url[:200]!r} is not an http(s) address")
    return normalize(absolute)


def _singlefile(data: bytes, comment: re.Match, file_name: str) -> SavedPage:
    fields: dict[str, str] = {"saved with": comment[1].decode("ascii")}
    for line in comment[2].decode("utf-8", "replace").splitlines():
        if (match := _FIELD.match(line)) and match[2]:
            fields[match[1].strip().lower()] = match[2]
    return SavedPage(
        url=fields.get("url", ""),
        kind="singlefile",
        document=data,
        content_type="text/html",
        file_name=file_name,
        saved_at=_js_date(fields.get("saved date")),
        headers=fields,
    )


def _js_date(text: str | None) -> str | None:
    """SingleFile's `saved date` (JavaScript's Date.toString: `Sat Nov 28 2026 18:40:00 GMT+0100 (…)`) as ISO, UTC."""
    match = _JS_DATE.search(text or "")
    if match is None:
        return None
    try:
        moment = datetime.strptime(f"{match[1]} {match[2]}", "%b %d %Y %H:%M:%S %z")
    except ValueError:
        return None
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _is_mhtml(head: bytes) -> bool:
    top = head.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].lower()
    return b"multipart/related" in top and (b"snapshot-content-location:" in top or b"mime-version:" in top)


def _mhtml(data: bytes, file_name: str) -> SavedPage:
    message = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not message.is_multipart():
        raise SavedPageError(f"{file_name}: an MHTML file without parts")
    headers = {name: str(value) for name, value in message.items() if name.lower() != "content-type"}
    url = str(message.get("Snapshot-Content-Location") or "")
    document: tuple[str, bytes, str] | None = None
    parts = []
    for part in message.iter_parts():
        location = str(part.get("Content-Location") or "").strip()
        payload = part.get_payload(decode=True)  # (bytes for a leaf part; None for a nested multipart)
        body = payload if isinstance(payload, bytes) else b""
        content_type = part.get_content_type()
        charset = part.get_content_charset()
        full_type = f"{content_type}; charset={charset}" if charset and content_type.startswith("text/") else content_type
        if document is None and content_type == "text/html":
            document = (location, body, full_type)  # the first HTML part is the page (Chromium writes it first; frames follow)
        elif web_url(location):
            parts.append(Part(location, full_type, body))
    if document is None:
        raise SavedPageError(f"{file_name}: an MHTML file without an HTML document")
    return SavedPage(
        url=url or document[0],
        kind="mhtml",
        document=document[1],
        content_type=document[2],
        file_name=file_name,
        saved_at=_mail_date(message.get("Date")),
        headers=headers,
        parts=parts,
    )


def _mail_date(value) -> str | None:
    moment = getattr(value, "datetime", None)
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def read_path(path: Path, url: str | None = None) -> SavedPage:
    """`read_saved` of a file on disk."""
    try:
        with path.open("rb") as stream:
            return read_saved(stream, path.name, url)
    except OSError as exc:
        raise SavedPageError(f"{path}: cannot read ({exc.strerror or exc})") from exc
