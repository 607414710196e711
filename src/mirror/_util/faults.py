"""Crash points for the reliability tests.

`MIRROR_CRASH_AT=point:n` kills the process with SIGKILL the nth time it
reaches `point`, so tests can kill -9 a real `mirror fetch` at an exact
moment: `capture` (a WARC record written, nothing committed), `extract`
(an extraction running in the pool), `commit` (inside the database
transaction), `render` (a browser capture written to WARC, nothing
committed), `render_commit` (inside its transaction). Unset, it costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("MIRROR_CRASH_AT", "")
_POINT, _, _COUNT = _SPEC.partition(":")
_seen = 0


def crash_point(name: str) -> None:
    global _seen
    if name != _POINT:
        return
    _seen += 1
    if _seen >= int(_COUNT or 1):
        os.kill(os.getpid(), signal.SIGKILL)
