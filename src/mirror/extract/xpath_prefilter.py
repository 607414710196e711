"""trafilatura's `re:test()` XPath predicates, decided once per page where they cannot match.

lxml evaluates EXSLT `re:test(@class, '…')` by calling back into Python for every element
the predicate reaches: about 60% of the time trafilatura spends in its XPath expressions,
whichever page it reads. On most pages most patterns match no class or id of the page at
all. So, while a page is extracted (`page_attributes`), each expression is evaluated as a
variant in which every `re:test()` that no value of its attributes anywhere in the page
matches is `false()`; the others are kept as they are. Every expression thus selects exactly
the nodes it did: trafilatura only ever removes elements and attributes, so the values read
from the page before extraction include those of every tree it derives from it.

Whether a pattern matches any of a page's values is asked once, of the values joined by
newlines, with `^` and `$` matching at line ends: every match within one value is a match
there (patterns with look-arounds or `\\A`/`\\Z`, which could tell the difference, are tested
value by value).
"""

from __future__ import annotations

import contextvars
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

__all__ = ["guard_regex_tests", "page_attributes"]

REGEXP_NS = "http://exslt.org/regular-expressions"
_RE_TEST = re.compile(r"re:test\(\s*(@[\w-]+(?:\s*\|\s*@[\w-]+)*)\s*,\s*'([^']*)'\s*(?:,\s*'([^']*)'\s*)?\)")
_page: contextvars.ContextVar[_PageValues | None] = contextvars.ContextVar("mirror_xpath_page", default=None)


class _PageValues:
    """The values of some attributes over a whole page, and which patterns match any."""

    def __init__(self, tree) -> None:
        self.tree = tree
        self.values: dict[str, list[str]] = {}
        self.answers: dict[tuple, bool] = {}
        self.variants: dict[int, object] = {}  # id(PageGuardedXPath) -> the expression to run on this page

    def can_match(self, attributes: tuple[str, ...], pattern: str, flags: str) -> bool:
        key = (attributes, pattern, flags)
        answer = self.answers.get(key)
        if answer is None:
            values = [value for attribute in attributes for value in self._values(attribute)]
            regex, joinable = _compiled(pattern, "i" in flags)
            if joinable:
                answer = regex.search("\n".join(values)) is not None
            else:
                answer = any(regex.search(value) for value in ["", *values])
            self.answers[key] = answer
        return answer

    def _values(self, attribute: str) -> list[str]:
        values = self.values.get(attribute)
        if values is None:
            values = self.values[attribute] = list(set(self.tree.xpath(f"//@{attribute}", smart_strings=False)))
        return values


@cache
def _compiled(pattern: str, ignore_case: bool) -> tuple[re.Pattern[str], bool]:
    """The pattern as lxml compiles it, and whether it may be searched for in joined values."""
    flags = re.UNICODE | (re.IGNORECASE if ignore_case else 0)
    joinable = _joinable(sre_parse.parse(pattern, flags).data)
    return re.compile(pattern, flags | (re.MULTILINE if joinable else 0)), joinable


def _joinable(items) -> bool:
    """No look-around and no \\A or \\Z: what a value's neighbours cannot change."""
    for op, arg in items:
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return False
        if op is sre.AT and arg in (sre.AT_BEGINNING_STRING, sre.AT_END_STRING):
            return False
        if op is sre.SUBPATTERN and not _joinable(arg[3]):
            return False
        if op is sre.BRANCH and not all(_joinable(branch) for branch in arg[1]):
            return False
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)) and not _joinable(arg[2]):
            return False
        if op is getattr(sre, "ATOMIC_GROUP", None) and not _joinable(arg):
            return False
        if op is sre.GROUPREF_EXISTS and not all(_joinable(branch) for branch in arg[1:] if branch):
            return False
    return True


class PageGuardedXPath:
    """An XPath with `re:test()` sites, evaluated as the variant the current page allows."""

    def __init__(self, original) -> None:
        self.original = original
        self.path: str = original.path
        self.sites = [
            (tuple(name.strip()[1:] for name in match[1].split("|")), match[2], match[3] or "", match.span())
            for match in _RE_TEST.finditer(self.path)
        ]
        self.variants: dict[tuple[bool, ...], object] = {}

    def __call__(self, tree, **variables):
        page = _page.get()
        if page is None:
            return self.original(tree, **variables)
        variant = page.variants.get(id(self))
        if variant is None:
            key = tuple(page.can_match(attributes, pattern, flags) for attributes, pattern, flags, _ in self.sites)
            variant = self.variants.get(key)
            if variant is None:
                variant = self.variants[key] = self._variant(key)
            page.variants[id(self)] = variant
        return variant(tree, **variables)

    def _variant(self, key: tuple[bool, ...]):
        from lxml.etree import XPath

        if all(key):
            return self.original
        path, end = [], 0
        for (_, _, _, (start, stop)), keep in zip(self.sites, key):
            path += [self.path[end:start], self.path[start:stop] if keep else "false()"]
            end = stop
        return XPath("".join([*path, self.path[end:]]), namespaces={"re": REGEXP_NS})


@contextmanager
def page_attributes(tree) -> Iterator[None]:
    """Let guarded expressions skip the patterns no attribute value of `tree`'s page matches,
    while trafilatura works on `tree` and the trees it makes from it."""
    token = _page.set(_PageValues(tree))
    try:
        yield
    finally:
        _page.reset(token)


def guard_regex_tests(*modules) -> int:
    """Replace, in place, the XPath expressions with `re:test()` that `modules` hold, in
    module-level lists (where trafilatura keeps most) or as module attributes; returns how many."""
    from lxml.etree import XPath

    guarded: dict[int, PageGuardedXPath] = {}  # one wrapper per expression, however often imported

    def guard(value):
        if not isinstance(value, XPath) or _RE_TEST.search(value.path) is None:
            return value
        if id(value) not in guarded:
            guarded[id(value)] = PageGuardedXPath(value)
        return guarded[id(value)]

    for module in modules:
        for name, value in list(vars(module).items()):
            if isinstance(value, list):
                value[:] = map(guard, value)
            elif guard(value) is not value:
                setattr(module, name, guarded[id(value)])
    return len(guarded)
