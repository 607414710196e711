"""A reading list's name in the archive (`links.seed`), and which list a name the user typed means.

A list is named by its path relative to the folder mirror ran in (`seeds/注意力.md`), or by its
whole path when it is outside that folder (`/home/me/pocket_export.html`): what `mirror links`
shows and every `--seed` takes. A user types what they typed before (`../pocket_export.html`),
the file's name alone (`pocket_export.html`), or runs from another folder: `resolve_seed` finds
the list each of those means. Only the standard library: `mirror search --seed` starts fast.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import NoReturn

__all__ = ["SeedNameError", "resolve_seed", "seed_name"]

SHOWN = 10  # reading lists named in an error


class SeedNameError(ValueError):
    """No reading list, or several, answer to the name given (the message says which there are)."""


def seed_name(path: Path, base: Path) -> str:
    """The name of the reading list at `path`, read from the folder `base` (resolved)."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


def resolve_seed(given: str, known: Iterable[str], base: Path | None = None) -> str:
    """The reading list among `known` (the archive's names) that `given` means: the name itself;
    else the file it names from `base` (the current folder), as `mirror fetch` would have named
    it; else the one list whose path ends with it (`pocket_export.html`,
    `seeds/004_….txt`). Raises SeedNameError for none or several."""
    known = list(dict.fromkeys(known))
    if given in known:
        return given
    try:
        as_path = seed_name(Path(given), (base or Path.cwd()).resolve())
    except (OSError, RuntimeError, ValueError):  # (a name no file system takes: no file is named so)
        as_path = None
    if as_path in known:
        return as_path
    tail = PurePosixPath(given.replace("\\", "/")).parts
    while tail and tail[0] in (".", "..", "/"):  # what leads out of the folder: the list's own path is what follows
        tail = tail[1:]
    matches = [name for name in known if tail and PurePosixPath(name).parts[-len(tail) :] == tail]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SeedNameError(f"{given!r} could be any of these reading lists: {_listed(matches)}; give more of its path")
    _unknown(given, known)


def _unknown(given: str, known: list[str]) -> NoReturn:
    if not known:
        raise SeedNameError(f"no reading list {given!r}: this archive has none yet (`mirror fetch LIST` or `mirror links LIST` records one)")
    raise SeedNameError(f"no reading list {given!r} in this archive; it has {_listed(known)} (`mirror links` names them)")


def _listed(names: list[str]) -> str:
    shown = ", ".join(sorted(names)[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
