"""verify_all: every problem in the store, each named precisely, none hidden by another."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.errors import IntegrityError, LockedError
from memories.store import Store, StoreProblem
from memories.store.records import BLOB, ENTRY
from tests.memories.store.support import PASSWORD, anchor_paths, new_store, put, raw, unlocked

BLOBS = ("rev/1", "rev/2", "rev/3")


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = new_store(tmp_path / "memories.db", entries={"a": b"alpha" * 4000, "b": b"b" * 9000})
    with unlocked(path) as store:
        for key in BLOBS:
            put(store, key, key.encode() * 10, blob=True)
    return path


def _flip_row(path: Path, kind: int, index: int = 0) -> bytes:
    with raw(path) as conn:
        rows = conn.execute(
            "SELECT id, value FROM state WHERE kind = ? ORDER BY id", (kind,)
        ).fetchall()
        row_id, value = rows[index]
        damaged = bytearray(value)
        damaged[-1] ^= 1
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (bytes(damaged), row_id))
    return bytes(row_id)


def test_a_sound_store_has_no_problems(store_path: Path) -> None:
    with unlocked(store_path) as store:
        assert store.verify_all() == []
        assert store.verify_all(BLOBS) == []
        assert store.verify() == {"entries": 2, "pages": 2, "blobs": 3, "checkpoints": 4}


def test_every_problem_is_reported_not_just_the_first(store_path: Path) -> None:
    with unlocked(store_path) as store:
        session = store._session
        assert session is not None
        blob_row = session.keys.row_id_for(BLOB, "rev/2")
    with raw(store_path) as conn:
        (value,) = conn.execute("SELECT value FROM state WHERE id = ?", (blob_row,)).fetchone()
        damaged = bytearray(value)
        damaged[5] ^= 1
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (bytes(damaged), blob_row))
        conn.execute("DELETE FROM checkpoints WHERE seq = 2")
    with unlocked(store_path) as store:
        _, state = anchor_paths(store_path)
        state.write_bytes(b"garbage")
        problems = store.verify_all(BLOBS)
    assert problems == [
        StoreProblem("blob", "rev/2", "does not decrypt (altered or moved)"),
        StoreProblem("checkpoint", "2", "is missing"),
        problems[2],
    ]
    assert problems[2].area == "anchor" and problems[2].ref == str(state)
    assert "truncated or not an anchor" in problems[2].what


def test_a_damaged_page_found_after_unlock_is_named(store_path: Path) -> None:
    with unlocked(store_path) as store:
        page = _flip_row(store_path, ENTRY)
        problems = store.verify_all()
    assert [(p.area, p.ref) for p in problems] == [("page", page.hex()[:16])]


def test_missing_and_unreferenced_blobs_are_reported_when_references_are_given(
    store_path: Path,
) -> None:
    with unlocked(store_path) as store:
        problems = store.verify_all(["rev/1", "rev/2", "rev/missing"])
        session = store._session
        assert session is not None
        orphan = session.keys.row_id_for(BLOB, "rev/3").hex()[:16]
    assert sorted((p.area, p.ref, p.what) for p in problems) == [
        ("blob", "rev/missing", "is missing"),
        ("blob", f"row:{orphan}", "no record refers to it"),
    ]


def test_without_references_only_blob_integrity_is_checked(store_path: Path) -> None:
    with unlocked(store_path) as store:
        blob_row = _flip_row(store_path, BLOB)
        problems = store.verify_all()
    assert problems == [
        StoreProblem("blob", f"row:{blob_row.hex()[:16]}", "does not decrypt (altered or moved)")
    ]


def test_a_root_replaced_while_open_is_reported(store_path: Path) -> None:
    with raw(store_path) as conn:
        (old_root,) = conn.execute("SELECT value FROM header WHERE name = 'root'").fetchone()
    with unlocked(store_path) as store:
        put(store, "c", b"c")
        with raw(store_path) as conn:
            conn.execute("UPDATE header SET value = ? WHERE name = 'root'", (old_root,))
        problems = store.verify_all()
    assert ("root", "root") in [(p.area, p.ref) for p in problems]


def test_verify_raises_with_the_first_problem_and_a_count(store_path: Path) -> None:
    with unlocked(store_path) as store:
        _flip_row(store_path, BLOB, 0)
        _flip_row(store_path, BLOB, 1)
        with pytest.raises(IntegrityError, match=r"^blob row:.*\(and 1 more problem\)$"):
            store.verify()


def test_verify_all_needs_the_store_unlocked(store_path: Path) -> None:
    with Store.open(store_path) as store, pytest.raises(LockedError):
        store.verify_all()
    with unlocked(store_path) as store:
        store.lock()
        with pytest.raises(LockedError):
            store.verify_all()
        store.unlock(PASSWORD)
        assert store.verify_all() == []
