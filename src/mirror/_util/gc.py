"""The cyclic garbage collector held off while a run builds millions of small objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection until the block ends.

    A seed of 1e6 links makes millions of links, tuples and rows, none in a
    cycle (reference counting frees them); every automatic collection walks
    them all again, a tenth of the time of parsing and recording them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
