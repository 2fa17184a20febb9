"""A read-only or full data home explains itself; foreign errors never escape the store."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memories.errors import DeniedError, IntegrityError, MemoriesError
from memories.store import Store, create_store
from memories.store import anchor as anchor_module
from memories.store import create as create_module
from memories.store import lock as lock_module
from tests.memories.store.support import FAST, PASSWORD, anchor_paths, new_store, put, unlocked


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_store(tmp_path / "data" / "memories.db", entries={"a": b"alpha"})


def _failing(real: Any, error: int, *, when: str) -> Any:
    """``real`` (an os function) that fails with ``error`` for paths containing ``when``."""

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        if when in str(path):
            raise OSError(error, os.strerror(error), str(path))
        return real(path, *args, **kwargs)

    return call


def test_a_read_only_store_refuses_writes_in_words(store_path: Path) -> None:
    with unlocked(store_path) as store:
        store._conn.execute("PRAGMA query_only = 1")
        with pytest.raises(MemoriesError) as caught:
            put(store, "b", b"bravo")
        assert type(caught.value) is MemoriesError
        assert caught.value.message == (
            "cannot write the store: the data home is read-only; nothing was changed"
        )
        with pytest.raises(DeniedError, match="read-only"):
            store.record_intent("read.intent")
        store._conn.execute("PRAGMA query_only = 0")
        assert store.get("b") is None


def test_a_full_disk_refuses_writes_in_words(store_path: Path) -> None:
    with unlocked(store_path) as store:
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(MemoriesError, match=r"^cannot write the store: the disk is full"):
            put(store, "big", os.urandom(200_000))


def test_opening_on_a_read_only_file_system_says_so(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module.os, "open", _failing(os.open, errno.EROFS, when=".lock"))
    with pytest.raises(MemoriesError, match="read-only file system") as caught:
        Store.open(store_path)
    assert type(caught.value) is MemoriesError and "Errno" not in caught.value.message


def test_opening_a_folder_as_a_store_says_it_cannot_be_opened(tmp_path: Path) -> None:
    folder = tmp_path / "memories.db"
    folder.mkdir()
    with pytest.raises(MemoriesError, match="cannot be opened"):
        Store.open(folder)


def test_a_read_error_is_translated(store_path: Path) -> None:
    class Broken:
        def execute(self, *args: object) -> object:
            error = sqlite3.OperationalError("disk I/O error")
            error.sqlite_errorname = "SQLITE_IOERR_READ"  # type: ignore[attr-defined]
            raise error

    with unlocked(store_path) as store:
        real, reader = store._conn, store._reader
        # Blobs are read through the read-only connection, everything else through the writer.
        store._conn = store._reader = Broken()  # type: ignore[assignment]
        try:
            with pytest.raises(MemoriesError, match="cannot read the store: the disk reported"):
                store.get_blob("rev")
            with pytest.raises(MemoriesError, match="cannot read the audit trail"):
                store.checkpoints()
        finally:
            store._conn, store._reader = real, reader


def test_a_corrupt_file_read_is_an_integrity_error(store_path: Path) -> None:
    class Corrupt:
        def execute(self, *args: object) -> object:
            error = sqlite3.DatabaseError("database disk image is malformed")
            error.sqlite_errorname = "SQLITE_CORRUPT"  # type: ignore[attr-defined]
            raise error

    with unlocked(store_path) as store:
        reader = store._reader
        store._reader = Corrupt()  # type: ignore[assignment]
        try:
            with pytest.raises(IntegrityError, match="damaged"):
                store.get_blob("rev")
        finally:
            store._reader = reader


def test_creating_on_a_read_only_file_system_says_so_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(create_module.os, "open", _failing(os.open, errno.EROFS, when="staging"))
    target = tmp_path / "data" / "memories.db"
    with pytest.raises(MemoriesError, match="read-only file system") as caught:
        create_store(target, PASSWORD, cost=FAST)
    assert type(caught.value) is MemoriesError
    assert list(target.parent.iterdir()) == []


def test_creating_with_an_unwritable_state_folder_publishes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"")
    target = tmp_path / "data" / "memories.db"
    with pytest.raises(MemoriesError, match="cannot write the rollback anchor"):
        create_store(target, PASSWORD, cost=FAST, state_dir=blocker / "state")
    assert list(target.parent.iterdir()) == [], "no store, no anchor, no staging file"


def test_creating_on_a_full_disk_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(anchor_module.os, "write", full)
    target = tmp_path / "data" / "memories.db"
    with pytest.raises(MemoriesError, match="the disk is full"):
        create_store(target, PASSWORD, cost=FAST)
    assert not target.exists()
    assert [p for p in target.parent.iterdir() if "anchor" in p.name] == []


def test_an_anchor_that_cannot_be_advanced_does_not_fail_the_commit(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.EIO, "Input/output error")

    with unlocked(store_path) as store:
        with monkeypatch.context() as patch, caplog.at_level(logging.WARNING):
            patch.setattr(anchor_module.os, "pwrite", broken)
            put(store, "b", b"bravo")
        assert store.get("b") == b"bravo"
    assert "disk reported an I/O error" in caplog.text
    assert all(p.exists() for p in anchor_paths(store_path))
    with unlocked(store_path) as store:  # the anchors are behind: still a good store
        assert store.get("b") == b"bravo"
