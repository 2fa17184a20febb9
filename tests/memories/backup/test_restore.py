"""Recovery at the domain level: ids a backup holds twice are not reused, and a store whose
records do not check out is not backed up."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.backup import create_backup
from memories.backup.payload import build_payload, parse_payload
from memories.backup.restore import RestoreReport, stage_restore
from memories.errors import IntegrityError
from memories.store import Mutation, Store, create_store
from memories.vault import Vaults, initialize, make_content
from memories.vault.identity import now
from memories.vault.operations import write_revision
from tests.memories.service.support import FAST

PASSWORD = "domain test password"
PASSPHRASE = "domain test passphrase"


def test_an_asset_id_held_twice_gets_a_new_id_per_occurrence(tmp_path: Path) -> None:
    path = tmp_path / "a" / "store.db"
    create_store(path, PASSWORD, cost=FAST, setup=lambda m: initialize(m))
    store = Store.open(path)
    store.unlock(PASSWORD)
    vaults = Vaults(store)
    try:
        memory = vaults.put(None, "memory", title="a memory")
        # Another device could have written a card under the same id: the id is then ambiguous.
        record = vaults.resolve_vault(None)
        m = store.mutation()
        card = make_content("card", title="a card", card_type="knowledge")
        write_revision(
            m,
            vaults.identity,
            record,
            asset_id=memory.asset_id,
            kind="card",
            state=None,
            parents=(),
            content=card,
        )
        store.commit(m, action="test.duplicate")
        unique = vaults.put(None, "memory", title="unique")
        # The vault's verifier keys assets by id, so such a store does not check out: no backup.
        with pytest.raises(IntegrityError, match="no backup was published"):
            create_backup(vaults, tmp_path / "refused", PASSPHRASE, cost=FAST)
        assert not (tmp_path / "refused").exists()
        when = now()
        payload = build_payload(
            vaults.export_state(), vaults.identity, backup_id="b" * 32, created_at=when
        )
    finally:
        vaults.close()
        store.close()
    snapshot = parse_payload(payload, backup_id="b" * 32, created_at=when)

    restored_path = tmp_path / "b-home" / "store.db"
    reports: list[RestoreReport] = []

    def setup(m: Mutation) -> None:
        reports.append(stage_restore(m, snapshot))

    create_store(restored_path, PASSWORD, cost=FAST, setup=setup)
    report = reports[0]
    assert (report.assets, report.new_ids) == (3, 2)
    store = Store.open(restored_path)
    store.unlock(PASSWORD)
    vaults = Vaults(store)
    try:
        ids = {s.title: s.id for s in vaults.list_assets(all_vaults=True)}
        assert ids["unique"] == unique.asset_id
        assert memory.asset_id not in {ids["a memory"], ids["a card"]}
        assert ids["a memory"] != ids["a card"]
        archived = {(a.kind, a.restored_as) for a in vaults.archive_assets()}
        assert ("memory", ids["a memory"]) in archived and ("card", ids["a card"]) in archived
        assert vaults.verify() == []  # the recovered store has one asset per id again
    finally:
        vaults.close()
        store.close()
