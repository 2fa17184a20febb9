"""A daemon that cannot start says why: its error's code, message and exit status reach the
command that started it."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memories.config import load_settings
from memories.daemon.launcher import daemon_pid
from memories.store import KdfCost, StoreLock, create_store
from tests.memories.cli.conftest import PASSWORD, Memories

FLOOR = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)


def _store_path() -> Path:
    path = load_settings().store_path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _real_store() -> Path:
    path = _store_path()
    create_store(path, PASSWORD, cost=FLOOR)
    return path


def _set_header(path: Path, name: str, value: bytes) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE header SET value = ? WHERE name = ?", (value, name))
    conn.close()


def _not_a_store() -> None:
    with sqlite3.connect(_store_path()) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()


def _newer_release() -> None:
    migrations = json.dumps(["0001_initial", "0002_from_the_future"]).encode()
    _set_header(_real_store(), "migrations", migrations)


def _malformed_header() -> None:
    _set_header(_real_store(), "migrations", b"{not json")


def _kdf_below_the_floor() -> None:
    path = _real_store()
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT value FROM header WHERE name = 'kdf'").fetchone()
    conn.close()
    kdf = json.loads(bytes(raw))
    kdf["memory_kib"] = 1024
    _set_header(path, "kdf", json.dumps(kdf).encode())


CASES: list[tuple[Callable[[], None], int, str, str]] = [
    (_not_a_store, 1, "integrity", r"is not a (readable )?memories store"),
    (_newer_release, 2, "invalid_input", "written by a newer release"),
    (_malformed_header, 1, "integrity", "header is malformed"),
    (_kdf_below_the_floor, 1, "integrity", "below the safe minimum"),
]


@pytest.mark.parametrize(
    ("build", "exit_code", "code", "message"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_the_start_error_reaches_the_cli_with_its_code_and_exit_status(
    memories: Memories, build: Callable[[], None], exit_code: int, code: str, message: str
) -> None:
    build()
    # Explicitly ...
    error = memories.fails(exit_code, "daemon", "start")
    assert error["code"] == code
    assert re.search(message, error["message"])
    assert "exited at start" not in error["message"]
    # ... and when a command starts the daemon on demand.
    human = memories("status")
    assert human.code == exit_code
    assert re.search(message, human.stderr) and "Traceback" not in human.stderr
    assert PASSWORD not in human.stderr
    assert daemon_pid(load_settings()) is None  # nothing was left running


def test_a_busy_store_is_reported_as_busy(memories: Memories) -> None:
    path = _real_store()
    lock = StoreLock(path)
    lock.acquire()
    try:
        error = memories.fails(1, "daemon", "start")
    finally:
        lock.release()
    assert error["code"] == "busy"
    assert "in use" in error["message"]
    assert memories.ok("daemon", "start")["pid"] > 0  # free again: it starts
