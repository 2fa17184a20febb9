"""Callers and elevation: per-session namespaces, remote separation, expiry on a monotonic clock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memories.errors import UsageError
from memories.service.access import (
    RELAY_REMOTE,
    WS_REMOTE,
    Caller,
    Elevation,
    local_cli_caller,
    session_of,
)
from tests.memories.service.support import Clock


def _started(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat, read here independently of the code under test."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    return int(stat.rpartition(")")[2].split()[19])


def test_a_child_process_belongs_to_its_parents_session() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert session_of(child.pid) == os.getpid()
        assert local_cli_caller(child.pid) == Caller(f"cli:{os.getpid()}@{_started(os.getpid())}")
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def test_two_commands_from_one_shell_share_a_session_and_other_shells_do_not() -> None:
    script = (
        "import subprocess, sys\n"
        "procs = [subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'],"
        " stdin=subprocess.PIPE) for _ in range(2)]\n"
        "print(' '.join(str(p.pid) for p in procs), flush=True)\n"
        "sys.stdin.read()\n"
        "for p in procs: p.stdin.close(); p.wait()\n"
    )
    shells = [
        subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        pids = []
        for shell in shells:
            assert shell.stdout is not None
            pids.append([int(p) for p in shell.stdout.readline().split()])
        (a1, a2), (b1, _) = pids
        first, second = (f"cli:{s.pid}@{_started(s.pid)}" for s in shells)
        assert local_cli_caller(a1) == local_cli_caller(a2) == Caller(first)
        assert local_cli_caller(b1) == Caller(second)
        assert local_cli_caller(a1) != local_cli_caller(b1)
    finally:
        for shell in shells:
            assert shell.stdin is not None
            shell.stdin.close()
            shell.wait(timeout=10)


def test_a_gone_process_is_its_own_session() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=10)
    assert session_of(child.pid) == child.pid


def test_the_command_name_may_contain_spaces_and_parentheses(tmp_path: Path) -> None:
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "stat").write_text(
        "4242 (evil) 1 (name) S 777 4242 4242 0 -1 4194560 0\n", encoding="utf-8"
    )
    assert session_of(4242, proc=tmp_path) == 777


def test_orphans_do_not_share_the_init_session(tmp_path: Path) -> None:
    for pid, parent in ((10, 1), (11, 0)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(
            f"{pid} (cli) S {parent} {pid} {pid} 0\n", encoding="utf-8"
        )
        assert session_of(pid, proc=tmp_path) == pid


def test_a_garbled_stat_falls_back_to_the_pid(tmp_path: Path) -> None:
    (tmp_path / "12").mkdir()
    (tmp_path / "12" / "stat").write_text("garbage", encoding="utf-8")
    assert session_of(12, proc=tmp_path) == 12


def test_remote_namespaces_are_marked_remote() -> None:
    assert WS_REMOTE.remote and RELAY_REMOTE.remote
    with pytest.raises(UsageError):
        Caller("ws:remote")
    with pytest.raises(UsageError):
        Caller("cli:1", remote=True)
    with pytest.raises(UsageError):
        Caller("")


def test_elevation_is_per_namespace() -> None:
    clock = Clock()
    table = Elevation(clock)
    table.grant("cli:1", 60)
    assert table.active("cli:1")
    assert not table.active("cli:2")
    assert not table.active(WS_REMOTE.namespace)
    assert not table.active(RELAY_REMOTE.namespace)
    table.grant(WS_REMOTE.namespace, 60)
    assert table.active(WS_REMOTE.namespace) and not table.active(RELAY_REMOTE.namespace)
    table.revoke("cli:1")
    assert not table.active("cli:1") and table.active(WS_REMOTE.namespace)


def test_elevation_expires_on_the_clock() -> None:
    clock = Clock()
    table = Elevation(clock)
    table.grant("cli:1", 60)
    clock.advance(59)
    assert table.seconds_left("cli:1") == pytest.approx(1)
    clock.advance(1)
    assert not table.active("cli:1")
    assert table.seconds_left("cli:1") == 0


def test_clear_ends_every_elevation_and_prune_forgets_expired_ones() -> None:
    clock = Clock()
    table = Elevation(clock)
    table.grant("cli:1", 10)
    table.grant("cli:2", 100)
    clock.advance(20)
    table.prune()
    assert table._until.keys() == {"cli:2"}
    table.clear()
    assert not table.active("cli:2")
    with pytest.raises(UsageError):
        table.grant("cli:1", 0)
