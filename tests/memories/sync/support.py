"""Replicas of one vault in separate store files, and a sync loop over any transport.

A replica is a copy of a locked, closed store file with its own rollback-anchor folder: the
same device keys and vault, diverging from the moment it is copied. That is how a test gets
several stores that share a vault without the pairing flow; pairing-based devices use the
daemons in the CLI tests.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.store import Store
from memories.sync.engine import execute, prepare
from memories.sync.merge import Report, ack
from memories.sync.queue import TARGETS_KEY, Target, Targets
from memories.sync.transports import Transport
from memories.vault import Vaults
from tests.memories.vault.support import PASSWORD, new_vault_store

TARGET = Target("0a0b0c0d", "folder", "/test", "2026-01-01T00:00:00Z")


def make_replicas(root: Path, count: int) -> list[Path]:
    """``count`` store files holding one vault (the first is the original)."""
    first = root / "r0" / "store.db"
    first.parent.mkdir(parents=True)
    new_vault_store(first)
    with Store.open(first, state_dir=root / "r0" / "state") as store:
        # The store was made with the default anchor folder; this replica keeps its own.
        store.unlock(PASSWORD, accept_rollback=True)
        m = store.mutation()
        m.put(TARGETS_KEY, Targets((TARGET,)).to_bytes())
        store.commit(m, action="sync.target.add")
    paths = [first]
    for i in range(1, count):
        folder = root / f"r{i}"
        shutil.copytree(root / "r0", folder)
        paths.append(folder / "store.db")
    return paths


@contextmanager
def replica(path: Path) -> Iterator[Vaults]:
    with Store.open(path, state_dir=path.parent / "state") as store:
        store.unlock(PASSWORD)
        vaults = Vaults(store)
        try:
            yield vaults
        finally:
            vaults.close()


def sync_once(vaults: Vaults, transport: Transport, *, at: float = 0.0) -> Report:
    plan = prepare(vaults, TARGET, at=at)
    outcome = execute(plan, transport)
    return ack(vaults, plan, outcome, at=at)


def sync_until_quiet(vaults: Vaults, transport: Transport, *, at: float = 0.0) -> Report:
    report = sync_once(vaults, transport, at=at)
    for _ in range(20):
        if not report.more:
            break
        report = sync_once(vaults, transport, at=at)
    return report


def titles(vaults: Vaults) -> list[str]:
    return sorted(a.title for a in vaults.list_assets())
