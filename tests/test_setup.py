"""The repository's contract: README's two set-up commands, and CI running the second verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_two_commands_in_a_virtual_environment():
    fetch, tests = readme_commands()[:2]
    for command in (fetch, tests):
        # PEP 668: a system python3 refuses `pip install` outside a virtual environment
        assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install")
    assert fetch.endswith("mirror fetch")
    assert "[test]" in tests and "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    test_command = readme_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci_lines[-1] == test_command
