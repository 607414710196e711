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
    # the bottom: the values passed between stages and the vocabulary, helpers that know no stage,
    # and URLs (identity, a reference resolved against its page), every stage's
    "_types": 0,
    "_enums": 0,
    "_util": 0,
    "_fts": 0,
    "urls": 0,
    # seeds: reading lists -> the link inventory
    "seeds": 1,
    # fetch/warc: raw captures, and HTTP into them
    "warc": 2,
    "http": 3,
    # extract: articles from captures, and the processes that run it
    "extract": 4,
    # check: what a capture found against the version before, soft 404s, link health, a check's
    # report; below the store, which records what it judged (plain SQL, no store import)
    "check": 5,
    # store: the archive folder, its database and the search index's layout
    "store": 6,
    # the runs: chromium's pass, then the fetch run that drives everything below
    "browser": 7,
    "fetch": 8,
    # pages the user's browser saved, stored as a fetched page is (`mirror add`, the upload route)
    "saved": 7,
    # the fetch run's engine on a Ray cluster: where its requests and extractions go (cli passes it to the run)
    "cluster": 9,
    # search and exports: reading the store
    "search": 9,
    "export": 9,
    # the faces: the datasette plugin and the command line
    "plugin": 10,
    "cli": 10,
    "__init__": 10,
    "__main__": 10,
}


# Stages that must not lean on each other whatever their ranks: (importer, imported, why)
INDEPENDENT = [
    ("search", "store", "search works on any connection to an archive"),
    ("store", "extract", "the database layer stores what extraction made; re-extracting is a run (fetch.reextract)"),
    ("plugin", "fetch", "serving never fetches"),
]


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
                    found.add(alias.name[len(package) + 1 :] or "__init__")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module != package and not (node.module or "").startswith(package + "."):
                    continue
                base = (node.module or "")[len(package) + 1 :].split(".") if node.module != package else []
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
    found |= lazy_homes(path, root, package)
    found.discard(".".join(here))
    return found


def lazy_homes(path: Path, root: Path, package: str) -> set[str]:
    """The modules a package's `lazy_exports(__name__, {name: home})` imports on first use."""
    here = module_name(path, root).split(".") if path.name == "__init__.py" else module_name(path, root).split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and isinstance(node.args[1], ast.Dict):
            for value in node.args[1].values:
                home = value.value
                if home.startswith(package + "."):
                    found.add(home[len(package) + 1 :])
                elif home.startswith("."):
                    level = len(home) - len(home.lstrip("."))
                    anchor = [p for p in here if p != "__init__"][: len([p for p in here if p != "__init__"]) - (level - 1)]
                    found.add(".".join(anchor + [home.lstrip(".")]))
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
                found.append(stack[stack.index(target) :] + [target])
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


def test_independent_stages_do_not_import_each_other():
    edges = graph(PACKAGE, "mirror")
    found = sorted(
        f"{m} -> {t} ({why})"
        for m, targets in edges.items()
        for t in targets
        for low, high, why in INDEPENDENT
        if m.split(".")[0] == low and t.split(".")[0] == high
    )
    assert found == []


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
    (pkg / "lazy").mkdir()
    (pkg / "lazy" / "__init__.py").write_text("__getattr__ = lazy_exports(__name__, {'g': 'pkg.high', 'y': '.mod'})\n")
    (pkg / "lazy" / "mod.py").write_text("")
    edges = graph(pkg, "pkg")
    ranks = {"__init__": 9, "low": 0, "high": 1, "sub": 1, "lazy": 0}
    assert upward_imports(edges, ranks) == ["lazy (rank 0) imports high (rank 1)", "low (rank 0) imports high (rank 1)"]
    assert "lazy.mod" in edges["lazy"]
    assert sorted(map(tuple, circles(edges))) == [("high", "low", "high"), ("sub.a", "sub.b", "sub.a")]
