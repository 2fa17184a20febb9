"""Shared helpers for store tests: a fast KDF cost and raw access to the file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


DEADLINE = 30.0  # seconds a test waits for a condition before it fails instead of hanging


class GatedCommits:
    """A store's write connection whose next ``COMMIT`` waits for the test (a seam, no sleeps).

    After :meth:`arm`, the next ``COMMIT`` sets :attr:`reached`, waits for :attr:`release`
    and then commits, or fails like a device error when armed with ``fail=True``. Later
    commits pass straight through until it is armed again. :attr:`commits` counts them all.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.reached = threading.Event()
        self.release = threading.Event()
        self._armed = False
        self._fail = False
        self.commits = 0

    def arm(self, *, fail: bool = False) -> None:
        self.reached.clear()
        self.release.clear()
        self._armed, self._fail = True, fail

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            self.commits += 1
        if sql == "COMMIT" and self._armed:
            self._armed = False
            self.reached.set()
            if not self.release.wait(DEADLINE):
                raise AssertionError("the test never released the gated commit")
            if self._fail:
                raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def gated_commits(store: Store) -> Iterator[GatedCommits]:
    """Put a :class:`GatedCommits` in front of ``store``'s write connection for a while."""
    real = store._conn
    gate = GatedCommits(real)
    store._conn = gate  # type: ignore[assignment]
    try:
        yield gate
    finally:
        gate.release.set()
        store._conn = real


class WatchedLock:
    """The store's I/O lock, telling the test when a thread other than ``owner`` asks for it."""

    def __init__(self, inner: Any, owner: int) -> None:
        self._inner = inner
        self._owner = owner
        self.contended = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if threading.get_ident() != self._owner:
            self.contended.set()
        return bool(self._inner.acquire(blocking, timeout))

    def release(self) -> None:
        self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
