"""The header is bound to the data; rotation makes old headers useless; unlock errors explain."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memories.errors import DeniedError, IntegrityError, MemoriesError, UsageError
from memories.store import (
    HeaderChangedError,
    MalformedHeaderError,
    NewerFormatError,
    NotAStoreError,
    Store,
    UnsafeKdfError,
)
from memories.store.records import BLOB, ENTRY, StoreKeys, open_row
from tests.memories.store.support import (
    PASSWORD,
    new_store,
    put,
    raw,
    restore,
    snapshot,
    unlocked,
)

NEW_PASSWORD = "a brand new passphrase"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = new_store(tmp_path / "memories.db", entries={"a": b"alpha" * 3000, "b": b"bravo"})
    with unlocked(path) as store:
        put(store, "rev/1", b"blob one", blob=True)
    return path


def _header(path: Path) -> dict[str, bytes]:
    with raw(path) as conn:
        return {str(n): bytes(v) for n, v in conn.execute("SELECT name, value FROM header")}


def _put_back(path: Path, rows: dict[str, bytes], names: tuple[str, ...]) -> None:
    with raw(path) as conn:
        for name in names:
            conn.execute("UPDATE header SET value = ? WHERE name = ?", (rows[name], name))


def test_header_put_back_after_a_password_change_is_refused_as_a_changed_header(
    store_path: Path,
) -> None:
    old = _header(store_path)
    with unlocked(store_path) as store:
        store.change_password(PASSWORD, NEW_PASSWORD)
    _put_back(store_path, old, ("kdf", "master"))
    with Store.open(store_path) as store:
        with pytest.raises(HeaderChangedError) as caught:
            store.unlock(PASSWORD)  # right for the header present, but the header is not ours
        assert "header was changed" in caught.value.message
        assert "password is not correct" not in caught.value.message
        assert not store.unlocked
        with pytest.raises(DeniedError, match="password is not correct"):
            store.unlock(NEW_PASSWORD)  # not right for the header present


def test_only_the_kdf_row_put_back_reads_as_a_wrong_password(store_path: Path) -> None:
    old = _header(store_path)
    with unlocked(store_path) as store:
        store.change_password(PASSWORD, NEW_PASSWORD)
    _put_back(store_path, old, ("kdf",))
    with Store.open(store_path) as store, pytest.raises(DeniedError):
        store.unlock(NEW_PASSWORD)


def test_change_password_stays_a_rewrap(store_path: Path) -> None:
    with raw(store_path) as conn:
        before = conn.execute("SELECT id, value FROM state").fetchall()
    with unlocked(store_path) as store:
        store.change_password(PASSWORD, NEW_PASSWORD)
    with raw(store_path) as conn:
        assert conn.execute("SELECT id, value FROM state").fetchall() == before
    with Store.open(store_path) as store:
        store.unlock(NEW_PASSWORD)
        assert store.verify_all() == []


def test_rotation_keeps_every_record_and_the_audit_trail(store_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    with unlocked(store_path) as store:
        actions = [c.action for c in store.checkpoints()]
        seq = store.rotate_master_key(PASSWORD, progress=lambda d, t: calls.append((d, t)))
        assert seq == store.seq == len(actions) + 1
        assert store.get("a") == b"alpha" * 3000 and store.get_blob("rev/1") == b"blob one"
        assert [c.action for c in store.checkpoints()] == ["store.master_rotated", *actions]
        assert store.verify_all(["rev/1"]) == []
        put(store, "c", b"after")
    done = [d for d, _ in calls]
    assert done == sorted(done) and calls[0][0] == 0 and calls[-1][0] == calls[-1][1]
    with unlocked(store_path) as store:
        assert store.get("c") == b"after" and store.get_blob("rev/1") == b"blob one"
        assert all(c.ok for c in store.checkpoints())
        assert store.verify_all(["rev/1"]) == []


def test_after_rotation_the_old_header_opens_nothing(store_path: Path) -> None:
    old = _header(store_path)
    with Store.open(store_path) as store:
        old_master = store._unwrap(PASSWORD)
        store.unlock(PASSWORD)
        store.rotate_master_key(PASSWORD, NEW_PASSWORD)
    _put_back(store_path, old, ("kdf", "master"))
    with Store.open(store_path) as store, pytest.raises(HeaderChangedError):
        store.unlock(PASSWORD)
    # Not just refused: the old master key no longer decrypts a single row.
    old_keys = StoreKeys(old_master, store.store_id)
    with raw(store_path) as conn:
        rows = conn.execute("SELECT kind, id, seq, value FROM state").fetchall()
    assert {kind for kind, *_ in rows} == {ENTRY, BLOB}
    for kind, row_id, seq, value in rows:
        with pytest.raises(IntegrityError):
            open_row(old_keys, bytes(row_id), seq, kind, bytes(value))
    old_keys.wipe()


def test_rotation_with_a_new_password_retires_the_old_one(store_path: Path) -> None:
    with unlocked(store_path) as store:
        with pytest.raises(DeniedError):
            store.rotate_master_key("wrong", NEW_PASSWORD)
        store.rotate_master_key(PASSWORD, NEW_PASSWORD)
    with Store.open(store_path) as store:
        with pytest.raises(DeniedError):
            store.unlock(PASSWORD)
        store.unlock(NEW_PASSWORD)
        assert store.checkpoints(limit=1)[0].details == {"password_changed": True}


def test_removing_a_carried_key_after_rotation_is_a_changed_header(store_path: Path) -> None:
    with unlocked(store_path) as store:
        store.rotate_master_key(PASSWORD)
    with raw(store_path) as conn:
        conn.execute("DELETE FROM header WHERE name = 'row_key'")
    with Store.open(store_path) as store, pytest.raises(HeaderChangedError):
        store.unlock(PASSWORD)


class _FailingCommit:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> object:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_rotation_that_fails_to_commit_changes_nothing(store_path: Path) -> None:
    with raw(store_path) as conn:
        before = conn.execute("SELECT * FROM state ORDER BY kind, id").fetchall()
    with unlocked(store_path) as store:
        real = store._conn
        store._conn = _FailingCommit(real)  # type: ignore[assignment]
        with pytest.raises(MemoriesError, match="nothing was changed"):
            store.rotate_master_key(PASSWORD, NEW_PASSWORD)
        store._conn = real
        assert store.get_blob("rev/1") == b"blob one", "the old keys are still in use"
        put(store, "c", b"still writable")
    with unlocked(store_path) as store:
        assert store.get("c") == b"still writable"
        assert store.verify_all(["rev/1"]) == []
    with raw(store_path) as conn:
        after = conn.execute("SELECT * FROM state WHERE kind = 1 ORDER BY id").fetchall()
    assert after == [row for row in before if row[0] == BLOB]


def test_a_damaged_store_is_not_rotated(store_path: Path) -> None:
    with raw(store_path) as conn:
        row_id, value = conn.execute("SELECT id, value FROM state WHERE kind = 1").fetchone()
        damaged = bytearray(value)
        damaged[-1] ^= 1
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (bytes(damaged), row_id))
    with unlocked(store_path) as store:
        seq = store.seq
        with pytest.raises(IntegrityError):
            store.rotate_master_key(PASSWORD)
        assert store.seq == seq
    with unlocked(store_path) as store:
        assert store.seq == seq


def test_anchors_from_before_a_rotation_still_vouch_for_the_store(
    store_path: Path, tmp_path: Path
) -> None:
    behind = snapshot(store_path, tmp_path / "behind", store=False)
    with unlocked(store_path) as store:
        store.rotate_master_key(PASSWORD)
    restore(behind)  # a crash right after the rotation's commit, before the anchors moved
    with unlocked(store_path) as store:
        assert store.get("b") == b"bravo"


# -- what unlock and open say -----------------------------------------------------------------


def test_wrong_password_says_so(store_path: Path) -> None:
    with Store.open(store_path) as store, pytest.raises(DeniedError) as caught:
        store.unlock("nope")
    assert caught.value.message == "the password is not correct"


@pytest.mark.parametrize(
    "content",
    [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + bytes(4000)],
    ids=["empty", "text", "broken-sqlite"],
)
def test_a_file_that_is_not_a_store_says_so(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "memories.db"
    path.write_bytes(content)
    with pytest.raises(NotAStoreError, match="not a memories store"):
        Store.open(path)
    path.unlink()
    new_store(path)  # the failed open released its lock: nothing of it is in the way
    with unlocked(path) as store:
        assert store.seq == 1


def test_a_plain_sqlite_database_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    sqlite3.connect(path).close()
    with pytest.raises(NotAStoreError, match="not a memories store"):
        Store.open(path)


def test_a_store_from_a_newer_release_says_to_upgrade(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute(
            "UPDATE header SET value = ? WHERE name = 'migrations'",
            (json.dumps(["0001_initial", "0002_later"]).encode(),),
        )
    with pytest.raises(NewerFormatError, match="upgrade memories") as caught:
        Store.open(store_path)
    assert isinstance(caught.value, UsageError)


def test_kdf_below_the_floor_says_so(store_path: Path) -> None:
    rows = _header(store_path)
    params = json.loads(rows["kdf"])
    params["memory_kib"] = 1024
    with raw(store_path) as conn:
        conn.execute(
            "UPDATE header SET value = ? WHERE name = 'kdf'", (json.dumps(params).encode(),)
        )
    with pytest.raises(UnsafeKdfError, match="below the safe minimum"):
        Store.open(store_path)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("kdf", b"{not json"),
        ("kdf", b'{"alg": "argon2id"}'),
        ("store_id", b"short"),
        ("master", None),
        ("root", None),
        ("migrations", b"{}"),
    ],
)
def test_a_malformed_header_says_so(store_path: Path, name: str, value: bytes | None) -> None:
    with raw(store_path) as conn:
        if value is None:
            conn.execute("DELETE FROM header WHERE name = ?", (name,))
        else:
            conn.execute("UPDATE header SET value = ? WHERE name = ?", (value, name))
    with pytest.raises(MalformedHeaderError, match="header"):
        Store.open(store_path)


def test_a_header_changed_while_open_is_reported_by_verify_all(store_path: Path) -> None:
    old = _header(store_path)
    with unlocked(store_path) as store:
        store.change_password(PASSWORD, NEW_PASSWORD)
        _put_back(store_path, old, ("kdf", "master"))
        problems = store.verify_all()
    assert [(p.area, p.ref) for p in problems] == [("header", "kdf/master")]
