"""The daemon works out a connection's caller once, and never hands it to another connection."""

from __future__ import annotations

import gc
import os

import pytest

from memories.daemon import main as daemon_main
from memories.ipc.server import Peer
from memories.service import Caller, local_cli_caller


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []

    def counting(pid: int) -> Caller:
        seen.append(pid)
        return local_cli_caller(pid)

    monkeypatch.setattr(daemon_main, "local_cli_caller", counting)
    return seen


def test_a_connection_reads_its_callers_process_once(lookups: list[int]) -> None:
    callers = daemon_main._Callers()
    peer = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    first = callers.of(peer)
    assert callers.of(peer) == first
    assert first == local_cli_caller(os.getpid())
    assert lookups == [os.getpid()]


def test_another_connection_from_the_same_pid_is_worked_out_afresh(lookups: list[int]) -> None:
    callers = daemon_main._Callers()
    one = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    other = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    callers.of(one)
    callers.of(other)
    assert lookups == [os.getpid(), os.getpid()]


def test_a_closed_connection_leaves_nothing_behind(lookups: list[int]) -> None:
    callers = daemon_main._Callers()
    peer = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    callers.of(peer)
    assert len(callers) == 1
    del peer
    gc.collect()
    assert len(callers) == 0
