from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memories.errors import (
    BusyError,
    ConflictError,
    DeniedError,
    IntegrityError,
    LockedError,
    MemoriesError,
    NotFoundError,
    UsageError,
)
from memories.store import Store, create_store
from tests.memories.store.support import FAST, PASSWORD, new_store, put, raw, unlocked


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_store(tmp_path / "vault" / "memories.db", entries={"hello": b"world"})


def test_created_store_reopens_with_its_records(store_path: Path) -> None:
    with unlocked(store_path) as store:
        assert store.get("hello") == b"world"
        put(store, "note/1", b"x" * 2048)
        put(store, "rev/1", b"payload", blob=True)
    with unlocked(store_path) as store:
        assert store.get("note/1") == b"x" * 2048
        assert store.get_blob("rev/1") == b"payload"
        assert store.get("rev/1") is None, "blobs are not entries"
        assert store.verify() == {"entries": 2, "pages": 1, "blobs": 1, "checkpoints": 3}


def test_store_file_and_folder_are_private(store_path: Path) -> None:
    assert stat.S_IMODE(store_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store_path.parent.stat().st_mode) == 0o700


def test_no_plaintext_reaches_the_file(store_path: Path) -> None:
    secret = b"the launch code is 0000-SECRET"
    with unlocked(store_path) as store:
        put(store, "note/secret", secret)
        put(store, "note/secret-key-name", b"v", blob=True)
    data = b"".join(p.read_bytes() for p in store_path.parent.iterdir() if p.is_file())
    assert secret not in data
    assert b"note/secret" not in data
    assert b"world" not in data


def test_wrong_password_is_one_clear_error(store_path: Path) -> None:
    with Store.open(store_path) as store, pytest.raises(DeniedError) as err:
        store.unlock("not the password")
    assert err.value.message == "the password is not correct"
    assert not store.unlocked


def test_locked_store_refuses_reads_and_writes(store_path: Path) -> None:
    with Store.open(store_path) as store:
        with pytest.raises(LockedError, match="memories unlock"):
            store.get("hello")
        with pytest.raises(LockedError):
            store.mutation()


def test_lock_forgets_plaintext_and_bumps_the_generation(store_path: Path) -> None:
    with unlocked(store_path) as store:
        generation = store.generation
        keys = store._session.keys if store._session else None
        assert keys is not None
        store.lock()
        assert store.generation == generation + 1
        assert not store.unlocked
        assert bytes(keys.master) == bytes(32) and bytes(keys.state) == bytes(32)
        with pytest.raises(LockedError):
            store.get("hello")
        store.unlock(PASSWORD)
        assert store.get("hello") == b"world"


def test_mutation_reads_its_own_staged_changes(store_path: Path) -> None:
    with unlocked(store_path) as store:
        mutation = store.mutation()
        mutation.put("a", b"1")
        mutation.delete("hello")
        assert mutation.get("a") == b"1"
        assert mutation.get("hello") is None
        assert store.get("hello") == b"world", "nothing changes before commit"
        store.commit(mutation, action="test")
        assert store.get("hello") is None
        assert dict(store.entries()) == {"a": b"1"}


def test_deleting_entries_keeps_the_root_consistent(store_path: Path) -> None:
    with unlocked(store_path) as store:
        mutation = store.mutation()
        mutation.put("x", b"1")
        mutation.delete("x")
        mutation.delete("hello")
        mutation.delete("never-existed")
        store.commit(mutation, action="test")
        assert store.count() == 0
    with unlocked(store_path) as store:
        assert store.count() == 0
        store.verify()


def test_blobs_are_write_once(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "rev", b"first", blob=True)
        seq = store.seq
        mutation = store.mutation()
        mutation.put("hello", b"changed")
        mutation.put_blob("rev", b"second")
        with pytest.raises(ConflictError, match="write-once"):
            store.commit(mutation, action="test")
        assert store.seq == seq
        assert store.get("hello") == b"world"
        assert store.get_blob("rev") == b"first"
        assert store.has_blob("rev") and not store.has_blob("other")
        with pytest.raises(IntegrityError, match="missing"):
            store.get_blob("other")


def test_disk_full_during_commit_changes_nothing(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "before", b"ok")
        seq = store.seq
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")
        mutation = store.mutation()
        mutation.put("big", os.urandom(256 * 1024))
        with pytest.raises(MemoriesError, match="disk is full"):
            store.commit(mutation, action="test")
        assert store.get("big") is None
        assert store.seq == seq
        store._conn.execute("PRAGMA max_page_count = 1073741823")
        put(store, "after", b"ok")
    with unlocked(store_path) as store:
        assert store.get("before") == b"ok" and store.get("after") == b"ok"
        assert store.get("big") is None
        store.verify()


class _FailingCommit:
    """A connection whose COMMIT fails like a device error, to prove nothing half-applies."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> object:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_io_error_during_commit_leaves_memory_and_disk_at_the_last_commit(
    store_path: Path,
) -> None:
    with unlocked(store_path) as store:
        real = store._conn
        store._conn = _FailingCommit(real)  # type: ignore[assignment]
        mutation = store.mutation()
        mutation.put("hello", b"changed")
        mutation.put_blob("rev", b"x")
        with pytest.raises(MemoriesError, match="nothing was changed"):
            store.commit(mutation, action="test")
        with pytest.raises(DeniedError, match="delivery denied"):
            store.record_intent("read.intent", {"asset": "abc"})
        assert store.get("hello") == b"world"
        assert not store.has_blob("rev")
        store._conn = real
        store.verify()
    with unlocked(store_path) as store:
        assert store.get("hello") == b"world"
        assert store.verify()["checkpoints"] == 1


def test_intents_are_checkpoints_without_content(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "note", b"private words")
        seq = store.record_intent("read.intent", {"asset": "abc123", "caller": "cli:1"})
        newest = store.checkpoints(limit=1)[0]
        assert newest.seq == seq
        assert newest.action == "read.intent"
        assert newest.details == {"asset": "abc123", "caller": "cli:1"}
        assert [c.action for c in store.checkpoints()] == [
            "read.intent",
            "test.put",
            "store.create",
        ]
        assert "private words" not in json.dumps([c.to_dict() for c in store.checkpoints()])


def test_change_password_rewraps_only_the_master_key(store_path: Path) -> None:
    with unlocked(store_path) as store:
        state_before = store._conn.execute("SELECT id, value FROM state").fetchall()
        with pytest.raises(DeniedError):
            store.change_password("wrong", "new password")
        store.change_password(PASSWORD, "new password", memory_kib=FAST.memory_kib * 2)
        assert store.kdf.memory_kib == FAST.memory_kib * 2
        assert store._conn.execute("SELECT id, value FROM state").fetchall() == state_before
    with Store.open(store_path) as store:
        with pytest.raises(DeniedError):
            store.unlock(PASSWORD)
        store.unlock("new password")
        assert store.get("hello") == b"world"
        assert store.checkpoints(limit=1)[0].action == "store.password"


def test_second_opener_is_told_who_holds_the_store(store_path: Path) -> None:
    with Store.open(store_path), pytest.raises(BusyError, match=f"PID {os.getpid()}"):
        Store.open(store_path)
    code = textwrap.dedent(
        f"""
        import sys
        from memories.store import Store
        from memories.errors import BusyError
        try:
            Store.open({str(store_path)!r})
        except BusyError as exc:
            print(exc.message)
            sys.exit(7)
        """
    )
    with Store.open(store_path):
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
    assert proc.returncode == 7, proc.stderr
    assert f"in use by PID {os.getpid()}" in proc.stdout
    with Store.open(store_path):
        pass  # released on close


def test_opening_a_missing_store_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="memories init"):
        Store.open(tmp_path / "nothing.db")


def test_creation_never_overwrites_an_existing_store(store_path: Path) -> None:
    before = store_path.read_bytes()
    with pytest.raises(ConflictError, match="already exists"):
        create_store(store_path, "other", cost=FAST)
    assert store_path.read_bytes() == before
    assert [p.name for p in store_path.parent.iterdir() if "staging" in p.name] == []


def test_leftover_staging_file_does_not_block_a_retry(tmp_path: Path) -> None:
    target = tmp_path / "memories.db"
    dead = tmp_path / ".memories.db.staging-999999999-abcd1234"
    dead.write_bytes(b"half a database")
    new_store(target)
    assert not dead.exists(), "a dead creator's staging file is swept"
    with unlocked(target) as store:
        assert store.verify()["checkpoints"] == 1


def test_concurrent_creation_has_exactly_one_winner(tmp_path: Path) -> None:
    target = tmp_path / "race" / "race.db"
    code = textwrap.dedent(
        f"""
        import sys, time
        from memories.errors import ConflictError
        from memories.store import KdfCost, create_store
        start = float(sys.argv[1])
        while time.time() < start:
            pass
        try:
            create_store(__import__("pathlib").Path({str(target)!r}), sys.argv[2],
                         cost=KdfCost(1, 19456, 1))
        except ConflictError:
            sys.exit(9)
        """
    )
    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen([sys.executable, "-c", code, start, f"pw{i}"], stderr=subprocess.PIPE)
        for i in range(2)
    ]
    outcomes = [(p.wait(timeout=60), p.stderr.read().decode() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 9], outcomes
    names = sorted(p.name for p in target.parent.iterdir())
    assert len(names) == 2 and names[0] == "race.db", "only the winner's store and anchor remain"
    assert names[1].startswith("race.db.") and names[1].endswith(".anchor")
    winners = 0
    for password in ("pw0", "pw1"):
        with Store.open(target) as store:
            try:
                store.unlock(password)
                winners += 1
            except DeniedError:
                pass
    assert winners == 1


def test_a_store_from_a_newer_release_is_refused(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute(
            "UPDATE header SET value = ? WHERE name = 'migrations'",
            (json.dumps(["0001_initial", "0002_from_the_future"]).encode(),),
        )
    with pytest.raises(UsageError, match="newer release"):
        Store.open(store_path)


def test_an_unknown_migration_history_is_an_integrity_error(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute(
            "UPDATE header SET value = ? WHERE name = 'migrations'",
            (json.dumps(["0001_something_else"]).encode(),),
        )
    with pytest.raises(IntegrityError):
        Store.open(store_path)


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    with pytest.raises(IntegrityError):
        Store.open(junk)
    # and the failed open released its lock
    other = tmp_path / "plain.db"
    sqlite3.connect(other).close()
    with pytest.raises(IntegrityError):
        Store.open(other)
