"""Locking wipes what Python can wipe: key buffers zeroed, ciphers and plaintext dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.errors import DeniedError, IntegrityError, LockedError
from memories.store import Store
from memories.store.records import BLOB, StoreKeys, seal_row
from tests.memories.store.support import PASSWORD, anchor_paths, new_store, put, unlocked


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = new_store(tmp_path / "memories.db", entries={"secret": b"plaintext value"})
    with unlocked(path) as store:
        put(store, "rev/1", b"blob", blob=True)
    return path


def _key_material(keys: StoreKeys) -> list[bytes]:
    return [bytes(buffer) for buffer in keys.buffers()]


def _assert_no_key_material(keys: StoreKeys, secrets: list[bytes]) -> None:
    assert all(not any(buffer) for buffer in keys.buffers()), "every key buffer is zero"
    assert keys.wiped and keys._sealer is None, "the prepared cipher is dropped"
    for name, value in vars(keys).items():
        if isinstance(value, bytes | bytearray):
            assert bytes(value) not in secrets, f"{name} still holds a key"
    with pytest.raises(LockedError):
        keys.row_id_for(BLOB, "rev/1")
    with pytest.raises(LockedError):
        seal_row(keys, bytes(32), 1, BLOB, b"x")


@pytest.mark.parametrize("rotated", [False, True], ids=["derived", "carried"])
def test_lock_leaves_no_key_material_in_the_store_objects(store_path: Path, rotated: bool) -> None:
    with unlocked(store_path) as store:
        if rotated:
            store.rotate_master_key(PASSWORD)
        session = store._session
        assert session is not None
        keys = session.keys
        secrets = _key_material(keys)
        assert all(any(s) for s in secrets)
        entries = session.entries
        store.get_blob("rev/1")
        store.lock()
        _assert_no_key_material(keys, secrets)
        assert store._session is None
        assert entries == {}, "decrypted entries are dropped"
        assert all(anchor._fd is None for anchor in store._anchors.files)  # type: ignore[union-attr]
        with pytest.raises(LockedError):
            store.get("secret")


def test_a_failed_unlock_wipes_the_keys_it_derived(store_path: Path) -> None:
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    made: list[StoreKeys] = []
    original = StoreKeys.__init__

    def spy(self: StoreKeys, master: bytearray, store_id: str) -> None:
        original(self, master, store_id)
        made.append(self)

    StoreKeys.__init__ = spy  # type: ignore[method-assign]
    try:
        with Store.open(store_path) as store, pytest.raises(IntegrityError):
            store.unlock(PASSWORD)
    finally:
        StoreKeys.__init__ = original  # type: ignore[method-assign]
    assert len(made) == 1
    assert made[0].wiped and not any(any(b) for b in made[0].buffers())


def test_a_wrong_password_leaves_no_session(store_path: Path) -> None:
    with Store.open(store_path) as store:
        with pytest.raises(DeniedError):
            store.unlock("wrong")
        assert store._session is None
