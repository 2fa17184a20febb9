"""Every test gets its own HOME and XDG folders; none touches the real home or fixed ports.

At the end of the run (in each worker, under pytest-xdist) no ``memories daemon`` whose home
lies under this run's temporary folder may still be alive: any that is gets killed, and the
run fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import CliResult, kill_processes, memories_daemons, run_cli

# Shared two-core machines stall now and then: a slow example is not a failure.
settings.register_profile("shared-machine", deadline=None)
settings.load_profile("shared-machine")

_FOREIGN_VARS = ("HISTFILE", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CODEX_SQLITE_HOME")


@pytest.fixture(scope="session", autouse=True)
def no_daemon_outlives_the_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fail the run if a daemon started by it is still running when it ends (and kill it)."""
    basetemp = tmp_path_factory.getbasetemp()
    yield
    leftovers = memories_daemons(basetemp)
    kill_processes(leftovers)
    assert not leftovers, f"daemons still running at the end of the run: {leftovers}"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("MEMORIES_HOME", str(home / ".local" / "share" / "memories"))
    for name in list(os.environ):
        if name.startswith(("URCHIN_", "MEMORIES_")) and name != "MEMORIES_HOME":
            monkeypatch.delenv(name)
    for name in _FOREIGN_VARS:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def journal_path(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin" / "journal" / "events.jsonl"


@pytest.fixture
def urchin() -> Callable[..., CliResult]:
    """Run the ``urchin`` console script: ``urchin("recent", "--json")``."""

    def run(*args: str, **kwargs: object) -> CliResult:
        return run_cli("urchin", *args, **kwargs)  # type: ignore[arg-type]

    return run
