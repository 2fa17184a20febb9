"""The daemon's periodic sync: runs while unlocked, never while locked, and is not activity."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from memories.config import load_settings
from memories.daemon.sync_timer import PeriodicSync
from memories.service import Service
from memories.sync.transports import FolderTransport
from tests.memories.service.support import FAST, PASSWORD, Clock, call, put


def _service(clock: Clock) -> Service:
    settings = dataclasses.replace(load_settings(), idle_lock_minutes=10)
    service = Service(settings, kdf_cost=FAST, clock=clock)
    call(service, {"op": "init", "password": PASSWORD, "device_name": "test device"})
    return service


def test_a_round_syncs_while_unlocked_and_does_nothing_while_locked(tmp_path: Path) -> None:
    clock = Clock()
    service = _service(clock)
    try:
        shared = tmp_path / "shared"
        call(service, {"op": "sync_add", "kind": "folder", "location": str(shared)})
        put(service, title="first", body="one")
        timer = PeriodicSync(service, interval=60)
        call(service, {"op": "lock"})
        timer.run_round()
        assert timer.rounds == 0 and FolderTransport(shared).list() == []
        call(service, {"op": "unlock", "password": PASSWORD})
        timer.run_round()
        assert timer.rounds == 1
        # The vault's policy entry, the revision, the audit records and their descriptor.
        assert len(FolderTransport(shared).list()) == 4
    finally:
        service.close()


def test_periodic_sync_does_not_keep_the_vault_from_locking_when_idle(tmp_path: Path) -> None:
    clock = Clock()
    service = _service(clock)
    try:
        call(service, {"op": "sync_add", "kind": "folder", "location": str(tmp_path / "s")})
        timer = PeriodicSync(service, interval=60)
        for _ in range(12):
            clock.advance(60)
            timer.run_round()
        assert service.tick() is True  # idle for 12 minutes despite 12 sync rounds
        assert not service.unlocked
    finally:
        service.close()
