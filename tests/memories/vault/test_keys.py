"""Key material the vault domain holds: epoch keys in wipeable buffers, zeroed on close and
dropped when the store locks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import IntegrityError, LockedError
from memories.vault import Vaults
from memories.vault.keys import KeyRing
from tests.memories.vault.support import PASSWORD, new_vault_store, opened


@pytest.fixture
def vaults(tmp_path: Path) -> Iterator[Vaults]:
    with opened(new_vault_store(tmp_path / "memories.db")) as v:
        yield v


def test_the_key_ring_decodes_each_epoch_key_once_and_wipes_it_in_place(vaults: Vaults) -> None:
    record = vaults.resolve_vault(None)
    ring = KeyRing()
    key = ring.epoch_key(record, 1)
    assert bytes(key) == record.keys[1] and len(ring) == 1
    assert ring.epoch_key(record, 1) is key
    ring.wipe()
    assert key == bytearray(len(key)) and len(ring) == 0
    with pytest.raises(IntegrityError):
        ring.epoch_key(record, 2)
    assert repr(ring) == "KeyRing(<0 keys>)"


def test_closing_zeroes_the_held_keys_and_refuses_every_later_call(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    assert vaults.get(saved.asset_id).content is not None
    assert vaults.held_keys == 1
    vaults.close()
    vaults.close()  # idempotent
    assert (vaults.closed, vaults.held_keys) == (True, 0)
    for call in (
        lambda: vaults.get(saved.asset_id),
        lambda: vaults.identity,
        lambda: vaults.vaults(),
        lambda: vaults.list_assets(),
        lambda: vaults.verify(),
        lambda: vaults.vault_count(),
        lambda: vaults.export_revision(saved.revision),
    ):
        with pytest.raises(LockedError):
            call()


def test_a_store_lock_drops_the_held_keys_before_anything_else_is_read(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.get(saved.asset_id)
    assert vaults.held_keys == 1
    vaults.store.lock()
    with pytest.raises(LockedError):
        vaults.get(saved.asset_id)
    vaults.store.unlock(PASSWORD)
    assert vaults.vault_count() == 2  # reads no content: the keys of the old unlock are gone
    assert vaults.held_keys == 0
    assert vaults.get(saved.asset_id).content is not None
    assert vaults.held_keys == 1
