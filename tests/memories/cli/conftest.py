"""Fixtures for driving the real ``memories`` console script against a real daemon.

Every test that may start a daemon uses ``memories``: at teardown it stops the daemon with
``memories daemon stop`` and kills it if it is still alive, so no daemon outlives its test.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memories.config import load_settings
from memories.daemon.launcher import daemon_pid
from memories.processes import alive
from tests.support import CliResult, run_cli, wait_for

PASSWORD = "correct horse battery staple"
#: The Argon2id floor: the cheapest parameters the service accepts, so tests stay fast.
FLOOR_KDF = ("--kdf-time-cost", "1", "--kdf-memory-mib", "19", "--kdf-parallelism", "1")


@dataclass
class Memories:
    """Runs ``memories`` in the test's isolated home."""

    def __call__(self, *args: str, **kwargs: Any) -> CliResult:
        # Standard input is always a pipe, so no command ever waits at a terminal prompt.
        kwargs.setdefault("input", "")
        return run_cli("memories", *args, **kwargs)

    def ok(self, *args: str, **kwargs: Any) -> Any:
        """Run with ``--json``, insist on exit 0 and return the parsed output."""
        result = self(*args, "--json", **kwargs)
        assert result.code == 0, (args, result.stdout, result.stderr)
        return result.json()

    def fails(self, code: int, *args: str, **kwargs: Any) -> dict[str, Any]:
        """Run with ``--json``, insist on exit ``code`` and return the error object."""
        result = self(*args, "--json", **kwargs)
        assert result.code == code, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stdout + result.stderr
        doc = result.json()
        assert doc["ok"] is False
        return dict(doc["error"])


def stop_daemon() -> None:
    """Stop this home's daemon; kill it when it does not stop."""
    pid = daemon_pid(load_settings())
    run_cli("memories", "daemon", "stop", timeout=30)
    if pid is not None and alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), timeout=10)


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[Memories]:
    """The console script, with MEMORIES_PASSWORD set; stops the daemon afterwards."""
    monkeypatch.setenv("MEMORIES_PASSWORD", PASSWORD)
    try:
        yield Memories()
    finally:
        stop_daemon()


@pytest.fixture
def store(memories: Memories) -> Memories:
    """A freshly initialized, unlocked store (daemon autostarted by ``init``)."""
    result = memories("init", *FLOOR_KDF, "--user-name", "Ada", "--json")
    assert result.code == 0, result.stderr
    assert "started the memories daemon" in result.stderr
    return memories
