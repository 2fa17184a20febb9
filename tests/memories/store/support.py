"""Shared helpers for store tests: a fast KDF cost and raw access to the file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.store import KdfCost, Mutation, Store, create_store

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
