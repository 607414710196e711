"""Shared fixtures: the repository's real seeds and a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirror.cli import app

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run `mirror ...` in-process, in a temporary working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRROR_ARCHIVE", raising=False)
    runner = CliRunner()

    def run(*args: str, env: dict | None = None):
        return runner.invoke(app, list(args), env=env, catch_exceptions=False)

    return run


def run_mirror(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed console script as a real process."""
    full_env = {k: v for k, v in os.environ.items() if k != "MIRROR_ARCHIVE"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def links_json(result) -> list[dict]:
    return json.loads(result.stdout)


@pytest.fixture
def web():
    """A hostile web server on 127.0.0.1."""
    from .webserver import HostileServer

    with HostileServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def web2():
    """A second host, 127.0.0.2, for per-host and cookie-domain tests."""
    from .webserver import HostileServer

    with HostileServer("127.0.0.2") as server:
        yield server
