"""Extraction CPU per page: mirror now, mirror at an older commit, and trafilatura's default `extract()`.

The three run interleaved, page by page, in one process, so a machine whose speed drifts
(a shared VM) slows them alike. The older `mirror.extract` is read from git and loaded as
its own module; it gets dateparser with all its locales unless it narrowed them itself.

    python bench/extract_cost.py --against f5c953a [--pages 100]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import report

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MIRROR_CORPUS") or ROOT.parent / "shared" / "corpus")


def _load_module(name: str, source: str):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def load_old_extract(ref: str):
    """`mirror.extract` as it was at `ref`, with the private helper modules (`._markdown`,
    `._charset`, ...) of that commit too, since their insides change with it."""

    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    source = show("src/mirror/extract.py")
    for helper in sorted(set(re.findall(r"^from \.(_\w+) import", source, re.M))):
        _load_module(f"old{helper}", show(f"src/mirror/{helper}.py").replace("from .", "from mirror."))
        source = source.replace(f"from .{helper} import", f"from old{helper} import")
    tweaks = {"narrowed": "_narrow_date_parser" in source, "plain lookup": "_plain_element_lookup" in source}
    return _load_module("old_extract", source.replace("from .", "from mirror.")).extract, tweaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git commit whose extraction to compare with")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    args = parser.parse_args()

    import htmldate.extractors as dates
    import lxml.html
    from trafilatura.utils import HTML_PARSER

    every_locale = dates.get_external_parser
    old, old_tweaks = load_old_extract(args.against)
    import trafilatura

    from mirror.extract import _plain_element_lookup as plain  # set on import, as the date parser
    from mirror.extract import extract as new

    narrowed = dates.get_external_parser  # mirror.extract narrows it on import

    def python_lookup():  # lxml.html's own, as trafilatura has it
        HTML_PARSER.set_element_class_lookup(lxml.html.HtmlElementClassLookup())

    files = sorted(CORPUS.glob("dragnet/input/*.html"))[200:] + sorted(CORPUS.glob("readability/test-pages/*/source.html"))
    step = max(1, len(files) // args.pages)
    bodies = [f.read_bytes() for f in files[::step]][: args.pages]
    if not bodies:
        sys.exit(f"no corpus pages found in {CORPUS} (set MIRROR_CORPUS)")
    url = "http://127.0.0.1/page.html"
    spent = {"before": 0.0, "now": 0.0, "trafilatura": 0.0}
    # the older commit gets dateparser and lxml's element lookup as it had them (every
    # locale, lxml.html's Python lookup) unless it changed them itself; trafilatura as it is
    old_setup = (narrowed if old_tweaks["narrowed"] else every_locale, plain if old_tweaks["plain lookup"] else python_lookup)
    runs = {"before": (old, old_setup), "now": (new, (narrowed, plain)), "trafilatura": (None, (narrowed, python_lookup))}
    for index, body in enumerate(bodies):
        for name, (function, (date_parser, set_lookup)) in runs.items():
            dates.get_external_parser = date_parser
            set_lookup()
            start = time.process_time()
            function(body, url, "text/html") if function else trafilatura.extract(body, url=url)
            if index >= 3:  # the first pages pay one-time compiles
                spent[name] += time.process_time() - start
    counted = len(bodies) - 3
    rows = [(f"extraction CPU ms/page ({name}, {counted} pages)", f"{1000 * value / counted:.1f}") for name, value in spent.items()]
    report(f"extraction cost against {args.against}", rows, args.record)


if __name__ == "__main__":
    main()
