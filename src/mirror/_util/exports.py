"""A package's public names, imported on first use (PEP 562): importing a package of mirror's
costs nothing until a name is asked for, so `mirror search` starts without the fetcher, the
extractor (trafilatura) or the seed parser (courlan)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], object]:
    """The `__getattr__` of `package`, whose public names live in the modules `homes` names
    (relative to it): `__getattr__ = lazy_exports(__name__, {"Client": ".client"})`."""

    def __getattr__(name: str) -> object:
        if name in homes:
            return getattr(importlib.import_module(homes[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
