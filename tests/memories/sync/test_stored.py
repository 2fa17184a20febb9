"""The blob-presence memo sync passes use: found blobs are remembered per unlock only."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.errors import LockedError
from memories.store import Store
from memories.sync import stored
from memories.sync.candidate import Candidate
from tests.memories.vault.support import PASSWORD, new_vault_store, opened


def test_a_found_blob_is_remembered_and_a_missing_one_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened(new_vault_store(tmp_path / "memories.db")) as vaults:
        store = vaults.store
        asked: list[str] = []
        real = Store.has_blob

        def counting(self: Store, key: str) -> bool:
            asked.append(key)
            return real(self, key)

        monkeypatch.setattr(Store, "has_blob", counting)
        assert not stored.has_blob(store, "sync/blob/objects/x")
        assert not stored.has_blob(store, "sync/blob/objects/x")
        assert asked == ["sync/blob/objects/x"] * 2
        m = store.mutation()
        m.put_blob("sync/blob/objects/x", b"bytes")
        store.commit(m, action="sync.merge")
        assert stored.has_blob(store, "sync/blob/objects/x")
        assert stored.has_blob(store, "sync/blob/objects/x")
        assert len(asked) == 3  # found once, then remembered
        # A lock ends the unlock the memo belongs to: asked again (and refused while locked).
        store.lock()
        with pytest.raises(LockedError):
            stored.has_blob(store, "sync/blob/objects/x")
        store.unlock(PASSWORD)
        assert stored.has_blob(store, "sync/blob/objects/x")
        assert len(asked) == 5


def test_blobs_a_pass_committed_are_known_without_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened(new_vault_store(tmp_path / "memories.db")) as vaults:
        candidate = Candidate(vaults)
        candidate.m.put_blob("sync/blob/objects/y", b"bytes")
        candidate.commit("sync.merge")
        monkeypatch.setattr(Store, "has_blob", lambda self, key: pytest.fail("asked"))
        assert stored.has_blob(vaults.store, "sync/blob/objects/y")
