"""Vault verification: a sound store has no problems and refers to every blob it holds; damage
to any record, the rarely read device-only vault included, is reported precisely, all of it,
without quoting content."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memories.crypto import canonical_bytes, new_id
from memories.errors import IntegrityError
from memories.vault import FilePayload, LocalIdentity, Problem, Vaults, make_content
from memories.vault.assets import AssetState
from memories.vault.identity import now
from memories.vault.operations import load_policy
from memories.vault.records import (
    BLOB_KINDS,
    IDENTITY_KEY,
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_key,
    chunk_key,
    key_kind,
    policy_key,
    revision_key,
    vault_key,
)
from memories.vault.revision import Revision, seal_revision
from tests.memories.vault.support import blob_rows, dumped, flip_row, new_vault_store, opened

TITLE = "Verify title sentinel 3c"
BODY = "VERIFY-BODY-SENTINEL-88e1"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_vault_store(tmp_path / "memories.db")


@pytest.fixture
def vaults(store_path: Path) -> Iterator[Vaults]:
    with opened(store_path) as v:
        yield v


def tamper(vaults: Vaults, **entries: bytes) -> None:
    """Overwrite entries through the store's own API, as a buggy writer or a bad merge would."""
    m = vaults.store.mutation()
    for key, value in entries.items():
        m.put(key, value)
    vaults.store.commit(m, action="test.tamper")


def device_vault(vaults: Vaults) -> VaultRecord:
    return vaults.resolve_vault("device")


def local_config(vaults: Vaults) -> AssetState:
    [summary] = vaults.list_assets("device")
    return vaults.resolve_asset(summary.id)


def sealed(
    vaults: Vaults, asset_id: str, parents: tuple[str, ...], title: str = TITLE
) -> tuple[Revision, list[bytes]]:
    """A valid revision of ``asset_id`` in the personal vault, not yet stored."""
    record = vaults.resolve_vault(None)
    return seal_revision(
        vaults.identity,
        vault_id=record.vault_id,
        asset_id=asset_id,
        kind="memory",
        parents=parents,
        policy=load_policy(vaults.store, record),
        epoch_key=record.keys[record.epoch],
        content=make_content("memory", title=title, body=BODY),
    )


def store_asset(
    vaults: Vaults, revision: Revision, header: bytes, chunks: list[bytes], revisions: int
) -> AssetState:
    """Store ``header`` and ``chunks`` under ``revision``'s id and an asset record whose single
    head it is, all through the store API."""
    state = replace(
        AssetState.first(
            asset_id=revision.asset_id,
            vault_id=revision.vault_id,
            kind="memory",
            revision_id=revision.id,
            content=make_content("memory", title=TITLE, body=BODY),
            at=revision.created_at,
            author=revision.author_user,
        ),
        revisions=revisions,
    )
    m = vaults.store.mutation()
    m.put_blob(revision_key(revision.id), header)
    for index, chunk in enumerate(chunks):
        m.put_blob(chunk_key(revision.id, index), chunk)
    m.put(asset_key("memory", revision.asset_id), state.to_bytes())
    vaults.store.commit(m, action="test.tamper")
    return state


# -- a sound store ------------------------------------------------------------------------------


def test_a_sound_store_has_no_problems_and_refers_to_every_blob_it_holds(
    store_path: Path,
) -> None:
    with opened(store_path) as vaults:
        vaults.create_vault("work")
        memory = vaults.put(None, "memory", title="Plan", body="v1")
        vaults.update(memory.asset_id, body="v2")
        vaults.update(memory.asset_id, base=memory.revision, fork=True, body="v2b")
        vaults.resolve(memory.asset_id, body="merged")
        a = vaults.put(None, "card", title="A", card_type="knowledge").asset_id
        b = vaults.put(None, "card", title="B", card_type="knowledge").asset_id
        vaults.link(a, b)
        vaults.put("work", "file", title="f", file=FilePayload("f.bin", "a/b", b"\x00" * 10))
        vaults.tombstone(b)
        report = vaults.verification()
        assert report.problems == ()
        assert (report.vaults, report.policies, report.assets) == (3, 3, 5)
        assert report.revisions == 1 + 4 + 2 + 1 + 1  # local_config, memory, cards, file, tombstone
        assert all(key_kind(key) in BLOB_KINDS for key in report.referenced_blobs)
        assert all(vaults.store.has_blob(key) for key in report.referenced_blobs)
        referenced = len(report.referenced_blobs)
    assert referenced == len(blob_rows(store_path))  # nothing is stored that nothing refers to


# -- revisions ----------------------------------------------------------------------------------


def test_a_flipped_byte_in_a_revision_blob_is_reported_for_that_revision(
    store_path: Path,
) -> None:
    before = blob_rows(store_path)
    with opened(store_path) as vaults:
        saved = vaults.put(None, "memory", title=TITLE, body=BODY)  # a header and one chunk
        personal = vaults.resolve_vault(None).vault_id
    header_or_chunk = blob_rows(store_path) - before
    assert len(header_or_chunk) == 2
    outcomes = []
    for row in header_or_chunk:
        flip_row(store_path, row)
        with opened(store_path) as vaults:
            outcomes.append(vaults.verify())
        flip_row(store_path, row)  # flipped back: the next round damages only the other row
    where = (personal, saved.asset_id, saved.revision)
    assert sorted(outcomes, key=lambda found: found[0].kind) == [
        [Problem("content", *where, "content chunk 0 is missing or unreadable")],
        [Problem("revision_missing", *where, "a head revision is missing or unreadable")],
    ]
    with opened(store_path) as vaults:
        assert vaults.verify() == []


def test_a_stored_revision_that_is_not_what_its_id_names_is_reported(vaults: Vaults) -> None:
    revision, chunks = sealed(vaults, new_id(), ())
    honest = revision.to_bytes()
    doc = json.loads(honest)
    doc["revision"]["created_at"] = "2030-01-01T00:00:00.000Z"  # still well formed
    state = store_asset(vaults, revision, canonical_bytes(doc), chunks, revisions=1)
    assert vaults.verify() == [
        Problem(
            "revision_mismatch",
            state.vault_id,
            state.asset_id,
            revision.id,
            "the stored revision is not the one its id names",
        )
    ]
    # Its chunks still count as referenced: they are not orphans.
    assert chunk_key(revision.id, 0) in vaults.verification().referenced_blobs


def test_a_missing_parent_is_reported_on_the_revision_that_names_it(vaults: Vaults) -> None:
    lost = "sha256:" + "ab" * 32
    revision, chunks = sealed(vaults, new_id(), (lost,))
    state = store_asset(vaults, revision, revision.to_bytes(), chunks, revisions=2)
    assert vaults.verify() == [
        Problem(
            "parent_missing",
            state.vault_id,
            state.asset_id,
            revision.id,
            f"parent {lost} is missing or unreadable",
        )
    ]
    assert revision_key(lost) in vaults.verification().referenced_blobs


def test_a_revision_signed_by_a_device_the_policy_does_not_allow_is_reported(
    vaults: Vaults,
) -> None:
    stranger = LocalIdentity.generate()
    record = vaults.resolve_vault(None)
    revision, chunks = seal_revision(
        stranger,
        vault_id=record.vault_id,
        asset_id=new_id(),
        kind="memory",
        parents=(),
        policy=load_policy(vaults.store, record),
        epoch_key=record.keys[record.epoch],
        content=make_content("memory", title=TITLE),
    )
    state = store_asset(vaults, revision, revision.to_bytes(), chunks, revisions=1)
    assert vaults.verify() == [
        Problem(
            "revision_policy",
            state.vault_id,
            state.asset_id,
            revision.id,
            "the revision was signed by a device or user its policy does not let write",
        )
    ]


def test_a_revision_carrying_a_forged_device_certificate_is_reported(vaults: Vaults) -> None:
    me = vaults.identity
    # The same device keys, but a certificate the user key never signed.
    forged = LocalIdentity(
        me.user,
        me.device,
        me.exchange,
        replace(me.certificate, device_name="renamed device"),
        me.user_name,
    )
    record = vaults.resolve_vault(None)
    revision, chunks = seal_revision(
        forged,
        vault_id=record.vault_id,
        asset_id=new_id(),
        kind="memory",
        parents=(),
        policy=load_policy(vaults.store, record),
        epoch_key=record.keys[record.epoch],
        content=make_content("memory", title=TITLE),
    )
    state = store_asset(vaults, revision, revision.to_bytes(), chunks, revisions=1)
    assert vaults.verify() == [
        Problem(
            "certificate",
            state.vault_id,
            state.asset_id,
            revision.id,
            "the revision's device certificate does not verify",
        )
    ]


# -- asset records against their DAG ------------------------------------------------------------


def test_asset_records_that_disagree_with_their_history_are_reported(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title=TITLE, body=BODY, tags=["t"])
    second = vaults.update(first.asset_id, body="v2")
    state = vaults.resolve_asset(first.asset_id)
    where = (state.vault_id, state.asset_id)
    tamper(
        vaults,
        **{
            asset_key("memory", state.asset_id): replace(
                state,
                heads=tuple(sorted((first.revision, second.revision))),
                revisions=5,
                title="renamed",
                tombstone=True,
            ).to_bytes()
        },
    )
    assert set(vaults.verify()) == {
        Problem("heads", *where, first.revision, "a recorded head is a parent of another revision"),
        Problem(
            "heads", *where, second.revision, "the deleted flag disagrees with the newest revision"
        ),
        Problem("heads", *where, None, "the record counts 5 revisions; the history holds 2"),
        Problem(
            "heads",
            *where,
            second.revision,
            "the summary disagrees with the newest revision's content",
        ),
    }


def test_a_link_to_an_asset_that_does_not_exist_is_reported(vaults: Vaults) -> None:
    a = vaults.put(None, "card", title="A", card_type="knowledge").asset_id
    b = vaults.put(None, "card", title="B", card_type="knowledge").asset_id
    vaults.link(a, b)
    state = vaults.resolve_asset(a)
    ghost = "0" * 32
    moved = replace(state, links=(replace(state.links[0], target=ghost),))
    tamper(vaults, **{asset_key("card", a): moved.to_bytes()})
    assert vaults.verify() == [
        Problem("link", state.vault_id, a, None, f"a link points at {ghost}, which does not exist")
    ]


# -- the device-only vault and device records ---------------------------------------------------


def test_a_device_only_vault_whose_chain_names_another_policy_entry_is_found(
    vaults: Vaults,
) -> None:
    record = device_vault(vaults)
    config = local_config(vaults)
    tamper(
        vaults,
        **{
            vault_key(record.vault_id): replace(record, policies=("sha256:" + "0" * 64,)).to_bytes()
        },
    )
    assert vaults.verify() == [
        Problem(
            "policy_mismatch",
            record.vault_id,
            None,
            None,
            "policy entry 1 is not the entry the vault's chain names",
        ),
        Problem(
            "revision_policy",
            record.vault_id,
            config.asset_id,
            config.newest,
            "the revision names a policy entry the vault's chain does not hold",
        ),
    ]


def test_an_unauthorized_entry_appended_to_the_device_only_vault_chain_is_found(
    vaults: Vaults,
) -> None:
    record = device_vault(vaults)
    genesis = load_policy(vaults.store, record)
    stranger = LocalIdentity.generate()
    unsigned = replace(
        genesis,
        seq=2,
        prev=genesis.id,
        members={stranger.user_fingerprint: "owner"},
        created_at=now(),
        certificate=stranger.certificate,
        signature=b"",
    )
    forged = replace(unsigned, signature=stranger.device.sign_canonical(unsigned.body()))
    m = vaults.store.mutation()
    m.put_blob(policy_key(record.vault_id, 2), forged.to_bytes())
    m.put(
        vault_key(record.vault_id),
        replace(record, policies=(*record.policies, forged.id)).to_bytes(),
    )
    vaults.store.commit(m, action="test.tamper")
    assert vaults.verify() == [
        Problem(
            "policy_chain",
            record.vault_id,
            None,
            None,
            "policy entry 2: a vault policy entry was signed without authority",
        )
    ]


def test_a_device_only_vault_without_its_epoch_key_is_found(vaults: Vaults) -> None:
    record = device_vault(vaults)
    config = local_config(vaults)
    tamper(vaults, **{vault_key(record.vault_id): replace(record, keys={}).to_bytes()})
    assert vaults.verify() == [
        Problem("epoch", record.vault_id, None, None, "the vault holds no key for epoch 1"),
        Problem(
            "epoch",
            record.vault_id,
            config.asset_id,
            config.newest,
            "the vault holds no key for the revision's epoch 1",
        ),
    ]


def test_device_records_that_do_not_add_up_are_reported(vaults: Vaults) -> None:
    local = LocalState.from_bytes(vaults.store.get(LOCAL_KEY) or b"")
    ghost = "f" * 32
    tamper(
        vaults,
        **{
            IDENTITY_KEY: canonical_bytes({"t": "memories.local_identity", "v": 1}),
            LOCAL_KEY: LocalState(local.personal, (*local.local_vaults, ghost)).to_bytes(),
        },
    )
    assert vaults.verify() == [
        Problem(
            "identity",
            None,
            None,
            None,
            "this device's identity cannot be read (the stored identity is malformed)",
        ),
        Problem("record", ghost, None, None, "a device-only vault is missing"),
    ]


# -- reporting ----------------------------------------------------------------------------------


def test_every_problem_is_reported_and_none_quotes_content(vaults: Vaults) -> None:
    memory = vaults.put(None, "memory", title=TITLE, body=BODY, tags=["sentinel-tag"])
    a = vaults.put(None, "card", title=TITLE, card_type="knowledge").asset_id
    b = vaults.put(None, "card", title="B", card_type="knowledge").asset_id
    vaults.link(a, b)
    state = vaults.resolve_asset(memory.asset_id)
    card = vaults.resolve_asset(a)
    device = device_vault(vaults)
    tamper(
        vaults,
        **{
            asset_key("memory", state.asset_id): replace(state, title="x").to_bytes(),
            asset_key("card", a): replace(
                card, links=(replace(card.links[0], target="0" * 32),)
            ).to_bytes(),
            vault_key(device.vault_id): replace(device, keys={}).to_bytes(),
        },
    )
    problems = vaults.verify()
    assert sorted(p.kind for p in problems) == ["epoch", "epoch", "heads", "link"]
    text = dumped([p.to_dict() for p in problems])
    for sentinel in (TITLE, BODY, "sentinel-tag"):
        assert sentinel not in text


def test_a_problem_has_a_json_form() -> None:
    problem = Problem("content", "v" * 32, "a" * 32, "sha256:" + "1" * 64, "it is damaged")
    assert problem.to_dict() == {
        "kind": "content",
        "vault": "v" * 32,
        "asset": "a" * 32,
        "revision": "sha256:" + "1" * 64,
        "message": "it is damaged",
    }


def test_store_keys_are_classified_by_what_they_hold() -> None:
    assert [
        key_kind(key)
        for key in (
            "identity",
            "local",
            "vault/v1",
            "asset/card/a1",
            "policy/v1/2",
            "rev/sha256:ab",
            "rev/sha256:ab/0",
        )
    ] == ["identity", "local", "vault", "asset", "policy", "revision", "chunk"]
    for bad in ("", "asset/card", "policy/v1/x", "rev/sha256:ab/x", "other/thing"):
        with pytest.raises(IntegrityError, match="does not belong"):
            key_kind(bad)


def test_verification_reads_and_never_commits(vaults: Vaults) -> None:
    vaults.put(None, "memory", title=TITLE, body=BODY)
    before = vaults.store.seq
    assert vaults.verify() == []
    assert vaults.store.seq == before
