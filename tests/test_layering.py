"""Data flows one way: no import circles, and no stage imports a stage above it.

Walks every import in src/mirror with ast (module-level, function-level and
TYPE_CHECKING imports alike), so a lazy import cannot hide an upward one.
The ranks below are the pipeline diagram in docs/internals.md (Code layout); a new module must be
given one here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mirror

PACKAGE = Path(mirror.__file__).parent

# lower number = lower stage; a module may import its own rank or lower ones
RANKS = {
    # the bottom: value types, the vocabulary, and helpers that know no stage
    "_types": 0, "_text": 0, "_faults": 0, "_loopback": 0, "_charset": 0, "_sniff": 0, "_blocked": 0, "_direct": 0, "_net": 0, "_resolver": 0,
    "_segment": 0, "_procmem": 0, "_gc": 0, "_child_call": 0, "_images": 0,
    # seeds/urls: the link inventory
    "urls": 1, "seeds": 1, "_html_seeds": 1,
    # fetch/warc: HTTP, the browser driver and WARC records
    "warc": 2, "_client": 2, "_render": 2,
    # extract: articles from captures, and the processes that run it
    "extract": 3, "_markdown": 3, "_pool": 3, "_xpath_prefilter": 3, "_css": 3, "_figures": 3,
    # store: the archive folder and its database (and the search index's layout, which it writes)
    "store": 4, "_fts": 4,
    # pipeline: runs that drive fetch + extract + store
    "fetch": 5, "browser": 5, "recovery": 5, "requisites": 5, "reindex": 5, "_progress": 5,
    # search: queries over the store
    "search": 6,
    # the faces: the datasette plugin and the command line
    "plugin": 7, "cli": 7, "__init__": 7, "__main__": 7,
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path, package: str) -> set[str]:
    """The package's own modules that `path` imports, as dotted names relative to the package."""
    here = module_name(path, root).split(".")
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    found.add(alias.name[len(package) + 1:] or "__init__")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module != package and not (node.module or "").startswith(package + "."):
                    continue
                base = (node.module or "")[len(package) + 1:].split(".") if node.module != package else []
            else:
                anchor = here if is_package and here != ["__init__"] else here[:-1]
                if here == ["__init__"]:
                    anchor = []
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = anchor + (node.module.split(".") if node.module else [])
            base = [b for b in base if b]
            for alias in node.names:
                candidate = base + [alias.name]
                if (root / Path(*candidate)).with_suffix(".py").exists() or (root / Path(*candidate) / "__init__.py").exists():
                    found.add(".".join(candidate))
                elif base:
                    found.add(".".join(base))
                else:
                    found.add("__init__")
    found.discard(".".join(here))
    return found


def graph(root: Path, package: str) -> dict[str, set[str]]:
    return {module_name(p, root): imports_of(p, root, package) for p in sorted(root.rglob("*.py"))}


def rank(module: str, ranks: dict[str, int]) -> int:
    return ranks[module.split(".")[0]]


def upward_imports(edges: dict[str, set[str]], ranks: dict[str, int]) -> list[str]:
    return sorted(
        f"{module} (rank {rank(module, ranks)}) imports {target} (rank {rank(target, ranks)})"
        for module, targets in edges.items()
        for target in targets
        if rank(target, ranks) > rank(module, ranks)
    )


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(module: str, stack: list[str]) -> None:
        state[module] = "open"
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    return found


def test_every_module_has_a_rank():
    unranked = sorted(m for m in graph(PACKAGE, "mirror") if m.split(".")[0] not in RANKS)
    assert unranked == [], f"give these modules a rank in RANKS (and the diagram in docs/internals.md): {unranked}"


def test_no_stage_imports_a_higher_one():
    assert upward_imports(graph(PACKAGE, "mirror"), RANKS) == []


def test_no_import_circles():
    assert circles(graph(PACKAGE, "mirror")) == []


def test_the_checks_catch_an_upward_import_and_a_circle(tmp_path):
    """The two checks above can fail: a small package with both faults, lazily imported."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from .high import g\n")
    (pkg / "high.py").write_text("from . import low\nfrom .sub.a import x\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from .b import y\n")
    (pkg / "sub" / "b.py").write_text("import pkg.sub.a\n")
    edges = graph(pkg, "pkg")
    ranks = {"__init__": 9, "low": 0, "high": 1, "sub": 1}
    assert upward_imports(edges, ranks) == ["low (rank 0) imports high (rank 1)"]
    assert sorted(map(tuple, circles(edges))) == [("high", "low", "high"), ("sub.a", "sub.b", "sub.a")]
