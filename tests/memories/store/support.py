"""Shared helpers for store tests: a fast KDF cost and raw access to the file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.paths import state_dir
from memories.store import KdfCost, Mutation, Store, create_store
from memories.store.anchor import local_anchor_path, state_anchor_path

# The floor: the cheapest parameters a store accepts, so tests stay fast.
FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
PASSWORD = "correct horse battery staple"


def new_store(path: Path, *, entries: dict[str, bytes] | None = None) -> Path:
    def setup(mutation: Mutation) -> None:
        for key, value in (entries or {}).items():
            mutation.put(key, value)

    create_store(path, PASSWORD, cost=FAST, setup=setup)
    return path


@contextmanager
def unlocked(path: Path) -> Iterator[Store]:
    with Store.open(path) as store:
        store.unlock(PASSWORD)
        yield store


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """The file itself, for tampering while no store has it open."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def put(store: Store, key: str, value: bytes, *, blob: bool = False) -> int:
    mutation = store.mutation()
    if blob:
        mutation.put_blob(key, value)
    else:
        mutation.put(key, value)
    return store.commit(mutation, action="test.put", details={"n": 1})


def store_id_of(path: Path) -> str:
    # Read-only, so closing it never checkpoints or removes a WAL a test is looking at.
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (value,) = conn.execute("SELECT value FROM header WHERE name = 'store_id'").fetchone()
    finally:
        conn.close()
    return bytes(value).decode("ascii")


def anchor_paths(path: Path) -> tuple[Path, Path]:
    """The store's anchor beside it and its anchor in the state folder."""
    store_id = store_id_of(path)
    return local_anchor_path(path, store_id), state_anchor_path(state_dir(), store_id)


def snapshot(path: Path, folder: Path, *, store: bool = True) -> dict[Path, bytes | None]:
    """Copy the closed store (with its WAL) and both anchors, to put them back later."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [path, *(path.with_name(path.name + s) for s in ("-wal", "-shm"))] if store else []
    saved: dict[Path, bytes | None] = {}
    for item in [*names, *anchor_paths(path)]:
        saved[item] = item.read_bytes() if item.exists() else None
    return saved


def restore(saved: dict[Path, bytes | None]) -> None:
    for item, data in saved.items():
        if data is None:
            item.unlink(missing_ok=True)
        else:
            item.write_bytes(data)
