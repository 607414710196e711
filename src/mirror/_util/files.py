"""Files that appear whole or not at all."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["replaced_whole", "write_whole"]


@contextlib.contextmanager
def replaced_whole(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed to `path` when the block ends well, removed
    otherwise (an error, Ctrl-C, SIGTERM): a reader never finds a cut-off file under the name."""
    path = Path(path)
    temporary = path.with_name(f".mirror-{secrets.token_hex(6)}.part")
    temporary.open("xb").close()  # (made as any new file is, with the user's umask: not mkstemp's 0600)
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_whole(path: Path, data: bytes) -> None:
    with replaced_whole(path) as temporary:
        temporary.write_bytes(data)
