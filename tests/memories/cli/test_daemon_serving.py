"""The daemon as a real process: many clients at once, the idle lock, a clean SIGTERM."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from memories.config import load_settings
from memories.daemon.launcher import daemon_pid, start_daemon
from memories.errors import BusyError, LockedError
from memories.ipc import IpcClient
from memories.processes import alive
from memories.store import Store
from tests.memories.cli.conftest import PASSWORD, Memories
from tests.support import wait_for

FLOOR = {"time_cost": 1, "memory_kib": 19456, "parallelism": 1}


def _init(memories: Memories) -> None:
    settings = load_settings()
    start_daemon(settings)
    with IpcClient(settings.socket_path) as client:
        client.call({"op": "init", "password": PASSWORD, "kdf": FLOOR})


def test_sixteen_clients_write_and_read_while_a_seventeenth_is_refused(
    memories: Memories,
) -> None:
    _init(memories)
    socket_path = load_settings().socket_path
    clients = [IpcClient(socket_path) for _ in range(16)]
    for client in clients:  # open all sixteen connections first
        client.call({"op": "status"})
    saved: list[list[str]] = [[] for _ in clients]
    errors: list[BaseException] = []

    def hammer(slot: int, client: IpcClient) -> None:
        try:
            for n in range(6):
                done = client.call({"op": "put", "title": f"client {slot} note {n}"})
                saved[slot].append(done["asset"])
                assert client.call({"op": "read", "ref": done["asset"]})["title"] == (
                    f"client {slot} note {n}"
                )
        except BaseException as exc:  # reported below, with the slot's context
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i, c)) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    with IpcClient(socket_path) as late, pytest.raises(BusyError, match="16 connections"):
        late.call({"op": "status"})
    for thread in threads:
        thread.join(timeout=120)
    for client in clients:
        client.close()
    assert not errors, errors
    listing = memories.ok("ls")
    titles = {row["title"] for row in listing["summaries"]}
    assert titles == {f"client {s} note {n}" for s in range(16) for n in range(6)}
    assert sum(len(ids) for ids in saved) == 96
    # Reads answered together in batches each left their own intent before delivery.
    with IpcClient(socket_path) as client:
        entries = client.call({"op": "audit_list", "limit": 1000})["entries"]
    assert sum(entry["action"] == "read.intent" for entry in entries) == 96


def test_idle_daemon_locks_the_vault(memories: Memories, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORIES_IDLE_LOCK_MINUTES", "0.02")  # 1.2 seconds
    _init(memories)
    socket_path = load_settings().socket_path
    with IpcClient(socket_path) as client:
        asset = client.call({"op": "put", "title": "before the idle lock"})["asset"]

        def locked() -> bool:
            return client.call({"op": "status"})["unlocked"] is False

        wait_for(locked, timeout=20, interval=0.2)
        with pytest.raises(LockedError, match="memories unlock"):
            client.call({"op": "read", "ref": asset})
        client.call({"op": "unlock", "password": PASSWORD})
        assert client.call({"op": "read", "ref": asset})["title"] == "before the idle lock"


def test_sigterm_locks_closes_and_removes_the_socket(memories: Memories) -> None:
    _init(memories)
    settings = load_settings()
    pid = daemon_pid(settings)
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not alive(pid), timeout=20)
    assert not settings.socket_path.exists()
    assert not Path(settings.socket_path.with_name("daemon.pid")).exists()
    with Store.open(settings.store_path) as store:  # the single-writer lock was released
        store.unlock(PASSWORD)
        assert store.verify()["checkpoints"] >= 1
