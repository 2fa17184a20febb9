"""Every way the file can be altered behind the store's back is refused, never read wrongly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memories.errors import DeniedError, IntegrityError
from memories.store import RollbackError, Store
from memories.store.records import BLOB, ENTRY
from tests.memories.store.support import (
    PASSWORD,
    new_store,
    put,
    raw,
    restore,
    snapshot,
    unlocked,
)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    # Entries big enough to land in two pages, so rows can be swapped.
    path = new_store(tmp_path / "memories.db", entries={"a": b"alpha" * 2000, "b": b"bravo" * 2000})
    with unlocked(path) as store:
        put(store, "blob", b"blob content", blob=True)
    return path


def _row_of_kind(path: Path, kind: int) -> bytes:
    with raw(path) as conn:
        row = conn.execute("SELECT id FROM state WHERE kind = ? LIMIT 1", (kind,)).fetchone()
    return bytes(row[0])


def _flip(value: bytes, at: int = -1) -> bytes:
    data = bytearray(value)
    data[at] ^= 0x01
    return bytes(data)


def _refused_at_unlock(path: Path) -> None:
    with Store.open(path) as store, pytest.raises(IntegrityError):
        store.unlock(PASSWORD)


def test_flipped_byte_in_an_entry_is_refused_at_unlock(store_path: Path) -> None:
    row_id = _row_of_kind(store_path, ENTRY)
    with raw(store_path) as conn:
        (value,) = conn.execute("SELECT value FROM state WHERE id = ?", (row_id,)).fetchone()
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (_flip(value, 20), row_id))
    _refused_at_unlock(store_path)


def test_flipped_byte_in_a_blob_is_refused_at_read(store_path: Path) -> None:
    row_id = _row_of_kind(store_path, BLOB)
    with raw(store_path) as conn:
        (value,) = conn.execute("SELECT value FROM state WHERE id = ?", (row_id,)).fetchone()
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (_flip(value), row_id))
    with unlocked(store_path) as store:
        with pytest.raises(IntegrityError):
            store.get_blob("blob")
        with pytest.raises(IntegrityError):
            store.verify()


def test_deleted_entry_is_refused_at_unlock(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM state WHERE id = ?", (_row_of_kind(store_path, ENTRY),))
    _refused_at_unlock(store_path)


def test_deleted_blob_is_refused_at_read(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM state WHERE id = ?", (_row_of_kind(store_path, BLOB),))
    with unlocked(store_path) as store, pytest.raises(IntegrityError, match="missing"):
        store.get_blob("blob")


def test_swapped_rows_are_refused(store_path: Path) -> None:
    with raw(store_path) as conn:
        rows = conn.execute("SELECT id, value FROM state WHERE kind = 0").fetchall()
        (id_a, value_a), (id_b, value_b) = rows[:2]
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (value_b, id_a))
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (value_a, id_b))
    _refused_at_unlock(store_path)


def test_row_copied_from_another_store_is_refused(store_path: Path, tmp_path: Path) -> None:
    other = new_store(tmp_path / "other.db", entries={"a": b"alpha", "b": b"bravo"})
    with raw(other) as conn:
        foreign = conn.execute("SELECT id, seq, kind, value FROM state").fetchall()
    with raw(store_path) as conn:
        mine = conn.execute("SELECT id FROM state WHERE kind = 0").fetchall()
        # Same logical key, same sequence number, another store's ciphertext under our id.
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (foreign[0][3], mine[0][0]))
    _refused_at_unlock(store_path)
    with raw(store_path) as conn:
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (foreign[0][3], mine[0][0]))
        conn.executemany("INSERT OR IGNORE INTO state VALUES (?, ?, ?, ?)", foreign)
    _refused_at_unlock(store_path)


def test_row_rolled_back_to_an_older_version_is_refused(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "a", b"version 1")
    with raw(store_path) as conn:
        old = conn.execute("SELECT id, seq, value FROM state WHERE kind = 0").fetchall()
    with unlocked(store_path) as store:
        put(store, "a", b"version 2")
    with raw(store_path) as conn:
        conn.executemany(
            "UPDATE state SET seq = ?, value = ? WHERE id = ?", [(s, v, i) for i, s, v in old]
        )
    _refused_at_unlock(store_path)


def test_entry_with_an_old_value_and_the_current_seq_is_refused(store_path: Path) -> None:
    with raw(store_path) as conn:
        old = dict(conn.execute("SELECT id, value FROM state WHERE kind = 0").fetchall())
    with unlocked(store_path) as store:
        put(store, "a", b"newer content")
    with raw(store_path) as conn:
        conn.executemany(
            "UPDATE state SET value = ? WHERE id = ?", [(v, i) for i, v in old.items()]
        )
    _refused_at_unlock(store_path)


def test_blob_moved_under_another_key_is_refused(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "other", b"other content", blob=True)
    with raw(store_path) as conn:
        rows = conn.execute("SELECT id, value FROM state WHERE kind = 1").fetchall()
        (id_a, value_a), (id_b, value_b) = rows
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (value_b, id_a))
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (value_a, id_b))
    with unlocked(store_path) as store:
        for key in ("blob", "other"):
            with pytest.raises(IntegrityError):
                store.get_blob(key)


def test_rolled_back_copy_of_the_whole_file_is_refused(store_path: Path, tmp_path: Path) -> None:
    backup = tmp_path / "copy.db"
    shutil.copyfile(store_path, backup)
    with unlocked(store_path) as store:
        put(store, "a", b"newer")
    shutil.copyfile(backup, store_path)
    with Store.open(store_path) as store, pytest.raises(IntegrityError, match="older"):
        store.unlock(PASSWORD)


def test_diverged_copy_at_the_same_sequence_is_refused(store_path: Path, tmp_path: Path) -> None:
    copies = snapshot(store_path, tmp_path / "before")
    with unlocked(store_path) as store:
        put(store, "a", b"one future")
    anchors_of_one_future = snapshot(store_path, tmp_path / "one-future", store=False)
    restore(copies)
    with unlocked(store_path) as store:
        put(store, "a", b"another future")
    restore(anchors_of_one_future)
    with Store.open(store_path) as store, pytest.raises(RollbackError, match="differs"):
        store.unlock(PASSWORD)


def test_flipped_root_is_refused(store_path: Path) -> None:
    with raw(store_path) as conn:
        (root,) = conn.execute("SELECT value FROM header WHERE name = 'root'").fetchone()
        conn.execute("UPDATE header SET value = ? WHERE name = 'root'", (_flip(root),))
    _refused_at_unlock(store_path)


def test_flipped_newest_checkpoint_is_refused(store_path: Path) -> None:
    with raw(store_path) as conn:
        seq, value = conn.execute(
            "SELECT seq, value FROM checkpoints ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = ?", (_flip(value), seq))
    _refused_at_unlock(store_path)


def test_deleted_oldest_checkpoint_is_refused_at_unlock(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE seq = 1")
    with Store.open(store_path) as store, pytest.raises(IntegrityError, match="oldest audit"):
        store.unlock(PASSWORD)


def test_flipped_wrapped_master_key_reads_as_a_wrong_password(store_path: Path) -> None:
    with raw(store_path) as conn:
        (master,) = conn.execute("SELECT value FROM header WHERE name = 'master'").fetchone()
        conn.execute("UPDATE header SET value = ? WHERE name = 'master'", (_flip(master),))
    with Store.open(store_path) as store, pytest.raises(DeniedError):
        store.unlock(PASSWORD)


@pytest.mark.parametrize(
    "change",
    [
        {"m": 1024},
        {"t": 0},
        {"p": 0},
        {"salt": "AAAA"},
    ],
)
def test_kdf_parameters_below_the_floor_are_refused(
    store_path: Path, change: dict[str, object]
) -> None:
    with raw(store_path) as conn:
        (kdf,) = conn.execute("SELECT value FROM header WHERE name = 'kdf'").fetchone()
        params = json.loads(kdf)
        aliases = {"m": "memory_kib", "t": "time_cost", "p": "parallelism"}
        for key, value in change.items():
            name = next((k for k in params if k in (key, aliases.get(key))), key)
            params[name] = value
        conn.execute(
            "UPDATE header SET value = ? WHERE name = 'kdf'", (json.dumps(params).encode(),)
        )
    with pytest.raises(IntegrityError):
        Store.open(store_path)


def test_format_marker_is_checked(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("UPDATE header SET value = ? WHERE name = 'format'", (b"something-else",))
    with pytest.raises(IntegrityError, match="not a memories store"):
        Store.open(store_path)
