"""Parsed records and revision headers are reused between reads, never across a change or lock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import IntegrityError
from memories.vault import Vaults
from memories.vault import base as base_module
from memories.vault.records import chunk_key
from tests.memories.vault.support import PASSWORD, new_vault_store, opened


@pytest.fixture
def vaults(tmp_path: Path) -> Iterator[Vaults]:
    with opened(new_vault_store(tmp_path / "memories.db")) as v:
        yield v


def _count_blob_reads(vaults: Vaults) -> list[str]:
    """The keys of the blobs read from the store file from now on, in order."""
    blob_reads: list[str] = []
    real = vaults.store.get_blob

    def counting(key: str) -> bytes:
        blob_reads.append(key)
        return real(key)

    vaults.store.get_blob = counting  # type: ignore[method-assign]
    return blob_reads


def test_a_second_read_reuses_the_parsed_revision(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.get(saved.asset_id)
    blob_reads = _count_blob_reads(vaults)
    view = vaults.get(saved.asset_id)
    assert view.content is not None and view.content.body == "v1"
    # The signed header and the sealed chunk of a small memory both come from memory.
    assert blob_reads == []


def test_a_large_revision_is_read_from_the_store_every_time(
    vaults: Vaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base_module, "_SEALED_ONE", 100)
    saved = vaults.put(None, "memory", title="Plan", body="x" * 500)
    vaults.get(saved.asset_id)
    blob_reads = _count_blob_reads(vaults)
    for _ in range(2):
        view = vaults.get(saved.asset_id)
        assert view.content is not None and view.content.body == "x" * 500
    assert blob_reads == [chunk_key(saved.revision, 0)] * 2


def test_kept_sealed_content_is_bounded_by_size(
    vaults: Vaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = [vaults.put(None, "memory", title=f"M{i}", body="b" * 100) for i in range(3)]
    vaults.get(saved[0].asset_id)
    one = vaults._sealed_size
    monkeypatch.setattr(base_module, "_SEALED", 2 * one)
    for each in saved:
        vaults.get(each.asset_id)
    assert list(vaults._sealed) == [saved[1].revision, saved[2].revision]
    assert vaults._sealed_size == 2 * one


def test_kept_sealed_content_is_checked_against_the_signature_on_every_read(
    vaults: Vaults,
) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.get(saved.asset_id)
    (chunk,) = vaults._sealed[saved.revision]
    vaults._sealed[saved.revision] = (chunk[:-1] + bytes([chunk[-1] ^ 1]),)
    with pytest.raises(IntegrityError):
        vaults.get(saved.asset_id)


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
