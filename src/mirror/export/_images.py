"""An article's archived image as the exports take it: what its bytes are, never what the server
called it.

A resource archived under an `image/*` type can be anything: an HTML error page labelled
image/jpeg, an SVG that runs a script, a format e-readers do not show. The exports embed or save
a file only when its bytes are an image (`mirror.extract.sniff.image_type`), an SVG only when it
runs and loads nothing, and name it by what it is (`2.png`, never `2.html` or `3.sh`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..extract.sniff import IMAGE_EXTENSIONS, image_type, inert_svg
from ..store.queries import latest_resource, warc_location
from ..warc import WarcError, read_payload

__all__ = ["ArchivedImage", "archived_image"]


class ArchivedImage(NamedTuple):
    media_type: str | None  # None: not usable, `problem` says why
    body: bytes
    problem: str = ""  # a note for the reader: "not archived", "not an image", ...

    @property
    def extension(self) -> str:
        return IMAGE_EXTENSIONS.get(self.media_type or "", ".bin")


def archived_image(db, archive_dir: Path, url: str) -> ArchivedImage:
    """The newest archived capture of the image at `url`, checked by its bytes."""
    row = latest_resource(db, url)
    if row is None:
        return ArchivedImage(None, b"", "image not archived")
    try:
        _, body = read_payload(archive_dir, warc_location(row))
    except (WarcError, OSError):
        return ArchivedImage(None, b"", "image not readable")
    kind = image_type(body or b"")
    if kind is None:
        return ArchivedImage(None, b"", "not an image")  # an error page, a script: what the server sent under an image's name
    if kind == "image/svg+xml" and not inert_svg(body):
        return ArchivedImage(None, b"", "image left out: an SVG that runs or loads something")
    return ArchivedImage(kind, body)
