"""Creating a store: build the whole file aside, then publish it without overwriting anything.

The database is built in a staging file in the destination's folder, closed and synced with
that folder, and then hard-linked to its final name. ``link`` fails if the name exists, so two
concurrent ``init`` runs cannot both win and an existing store is never replaced. A staging file
left by an interrupted attempt has its own unique name and does not block a retry; the next
attempt removes those whose creator is gone.

Both rollback anchors are written, durably, before the store is published: they are named by
the new store's random id, so no other store's anchors are touched, and a published store
always has them (a store whose anchors are missing has been tampered with). A loser of the
publishing race removes its own anchors.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memories.crypto import (
    DEFAULT_MEMORY_KIB,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    KdfParams,
    derive_key,
    new_id,
    new_key,
    wipe,
)
from memories.errors import ConflictError, MemoriesError
from memories.fsutil import fsync_dir
from memories.paths import state_dir as default_state_dir
from memories.processes import alive
from memories.store.anchor import Anchors
from memories.store.errors import os_reason, sqlite_reason
from memories.store.header import kdf_bytes, wrap_master
from memories.store.records import Root, StoreKeys, header_digest
from memories.store.schema import FORMAT_NAME, apply_migrations, connect
from memories.store.store import Mutation, Store

__all__ = ["KdfCost", "create_store"]


@dataclass(frozen=True)
class KdfCost:
    """Argon2id cost for a new store (defaults: RFC 9106's second recommendation)."""

    time_cost: int = DEFAULT_TIME_COST
    memory_kib: int = DEFAULT_MEMORY_KIB
    parallelism: int = DEFAULT_PARALLELISM


def create_store(
    path: Path,
    password: str,
    *,
    cost: KdfCost | None = None,
    setup: Callable[[Mutation], None] | None = None,
    state_dir: Path | None = None,
) -> str:
    """Create a new store at ``path`` and return its id.

    ``setup`` stages the initial records (identity, first vault) so they are part of the file
    before it is published. ``state_dir`` holds the second rollback anchor (default
    ``memories.paths.state_dir()``; pass the same to ``Store.open``). Raises ``ConflictError``
    if ``path`` exists (it is never replaced), ``UsageError`` for KDF parameters below the
    floor, ``MemoriesError`` naming the cause for I/O failures (read-only or full data home).
    """
    path = Path(path)
    cost = cost or KdfCost()
    kdf = KdfParams.generate(
        time_cost=cost.time_cost, memory_kib=cost.memory_kib, parallelism=cost.parallelism
    )
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise MemoriesError(f"cannot create {folder}: {os_reason(exc)}") from exc
    if path.exists():
        raise ConflictError(f"a store already exists at {path}; it was left untouched")
    _sweep_stale_staging(path)
    staging = folder / f".{path.name}.staging-{os.getpid()}-{secrets.token_hex(4)}"
    anchors: Anchors | None = None
    published = False
    try:
        anchor_dir = state_dir or default_state_dir()
        store_id, anchors = _build(staging, path, anchor_dir, password, kdf, setup)
        _publish(staging, path)
        published = True
        fsync_dir(folder)
    except OSError as exc:
        raise MemoriesError(f"cannot create the store in {folder}: {os_reason(exc)}") from exc
    finally:
        if anchors is not None and not published:
            anchors.remove()
        for leftover in (staging, *_sidecars(staging)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return store_id


def _build(
    staging: Path,
    path: Path,
    state_dir: Path,
    password: str,
    kdf: KdfParams,
    setup: Callable[[Mutation], None] | None,
) -> tuple[str, Anchors]:
    """Build the database in ``staging`` and write the anchors ``path`` will need."""
    store_id = new_id()
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.close(fd)
    master = new_key()
    kek = derive_key(password, kdf)
    try:
        wrapped = wrap_master(kek, master, store_id, kdf)
    finally:
        wipe(kek)
    keys = StoreKeys(master, store_id)
    anchors = Anchors(path, store_id, state_dir)
    built = False
    try:
        conn = connect(staging)
        try:
            conn.execute("BEGIN IMMEDIATE")
            apply_migrations(conn, [])
            header = {
                "format": FORMAT_NAME,
                "store_id": store_id.encode("ascii"),
                "kdf": kdf_bytes(kdf),
                "master": wrapped,
            }
            root = Root(seq=0, rows=0, digest=0, checkpoint="", header=header_digest(header))
            conn.executemany(
                "INSERT INTO header (name, value) VALUES (?, ?)",
                [*header.items(), ("root", root.seal(keys))],
            )
            conn.execute("COMMIT")
            store = Store(staging, conn, lock=None, state_dir=None)
            store._establish(keys)  # the staging store shares this module's package
            mutation = store.mutation()
            if setup is not None:
                setup(mutation)
            seq = store.commit(mutation, action="store.create")
            head = store._require().root.checkpoint
        finally:
            conn.close()
        fd = os.open(staging, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        anchors.create(keys, seq, head)
        built = True
    except sqlite3.Error as exc:
        raise MemoriesError(
            f"could not build the new store file ({sqlite_reason(exc)}); nothing was created"
        ) from exc
    finally:
        if not built:  # any failure, even an interrupt, leaves no anchor behind
            anchors.remove()
        keys.wipe()
    return store_id, anchors


def _publish(staging: Path, path: Path) -> None:
    try:
        os.link(staging, path)
    except FileExistsError:
        raise ConflictError(f"a store already exists at {path}; it was left untouched") from None
    except OSError as exc:
        raise MemoriesError(f"cannot publish the store at {path}: {os_reason(exc)}") from exc


def _sidecars(database: Path) -> tuple[Path, ...]:
    return tuple(
        database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal")
    )


def _sweep_stale_staging(path: Path) -> None:
    """Remove staging files of earlier attempts whose process no longer exists."""
    for candidate in path.parent.glob(f".{path.name}.staging-*"):
        base = candidate.name
        for suffix in ("-wal", "-shm", "-journal"):
            base = base.removesuffix(suffix)
        parts = base.rsplit("-", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        if alive(int(parts[1])):
            continue
        with contextlib.suppress(OSError):
            candidate.unlink()
