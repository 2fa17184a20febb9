"""Parsed records and revision headers are reused between reads, never across a change or lock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.vault import Vaults
from memories.vault import base as base_module
from memories.vault.records import chunk_key
from tests.memories.vault.support import PASSWORD, new_vault_store, opened


@pytest.fixture
def vaults(tmp_path: Path) -> Iterator[Vaults]:
    with opened(new_vault_store(tmp_path / "memories.db")) as v:
        yield v


def test_a_second_read_reuses_the_parsed_revision(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.get(saved.asset_id)
    blob_reads: list[str] = []
    real = vaults.store.get_blob

    def counting(key: str) -> bytes:
        blob_reads.append(key)
        return real(key)

    vaults.store.get_blob = counting  # type: ignore[method-assign]
    view = vaults.get(saved.asset_id)
    assert view.content is not None and view.content.body == "v1"
    # Only the content chunk is read again; the signed header comes from the cache.
    assert blob_reads == [chunk_key(saved.revision, 0)]


def test_closing_drops_every_cached_record_and_revision(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.get(saved.asset_id)
    assert vaults.cached_records > 0
    vaults.close()
    assert vaults.cached_records == 0


def test_a_store_lock_drops_cached_revisions_before_anything_else_is_read(
    vaults: Vaults,
) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.history(saved.asset_id)
    assert vaults.cached_records > 0
    vaults.store.lock()
    vaults.store.unlock(PASSWORD)
    assert vaults.vault_count() == 2  # parses nothing: what the old unlock parsed is gone
    assert vaults.cached_records == 0


def test_a_changed_record_is_parsed_again(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    assert vaults.get(saved.asset_id).revisions == 1
    vaults.update(saved.asset_id, base=saved.revision, body="v2")
    view = vaults.get(saved.asset_id)
    assert view.revisions == 2
    assert view.content is not None and view.content.body == "v2"
    vaults.card_types()  # parses the vault record
    vaults.define_card_type(None, "recipe", [{"name": "serves", "type": "number"}])
    assert "recipe" in {t.name for t in vaults.card_types()}


def test_the_revision_cache_is_bounded(vaults: Vaults, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base_module, "_REVISIONS", 2)
    saved = [vaults.put(None, "memory", title=f"M{i}", body="b") for i in range(3)]
    for one in saved:
        vaults.get(one.asset_id)
    assert list(vaults._revisions) == [saved[1].revision, saved[2].revision]


def test_a_new_vault_is_listed_after_the_list_was_cached(vaults: Vaults) -> None:
    before = {v.name for v in vaults.vaults()}
    vaults.create_vault("team")
    assert {v.name for v in vaults.vaults()} == before | {"team"}
    assert vaults.resolve_vault("team").name == "team"
