"""Signed revisions and policies: what ``Vaults.accept`` takes, what it refuses (leaving the store
untouched), how ``Vaults.verify`` reports damaged policy chains, and the known-answer vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from memories.crypto import (
    SigningKey,
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    chunks_digest,
    fingerprint,
    tagged_hash,
    verify_canonical,
)
from memories.errors import IntegrityError
from memories.vault import (
    Content,
    DeviceCertificate,
    LocalIdentity,
    Policy,
    Problem,
    Revision,
    Vaults,
)
from memories.vault.content import make_content
from memories.vault.identity import now
from memories.vault.operations import load_policy
from memories.vault.records import VaultRecord, policy_key, vault_key
from memories.vault.revision import REVISION_TAG, open_content, seal_revision
from tests.memories.vault.support import (
    another_device,
    blob_rows,
    flip_row,
    new_vault_store,
    opened,
    refused,
)
from tests.vectors import generate_vault
from tests.vectors.generate import VECTOR_DIR, render

REPO = VECTOR_DIR.parent.parent


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_vault_store(tmp_path / "memories.db")


@pytest.fixture
def vaults(store_path: Path) -> Iterator[Vaults]:
    with opened(store_path) as v:
        yield v


@dataclass(frozen=True)
class Sealed:
    header: bytes
    chunks: list[bytes]

    @property
    def revision(self) -> Revision:
        return Revision.from_bytes(self.header)


def personal(vaults: Vaults) -> tuple[VaultRecord, Policy]:
    record = vaults.resolve_vault(None)
    return record, load_policy(vaults.store, record)


def seal(
    vaults: Vaults,
    *,
    asset_id: str,
    parents: tuple[str, ...],
    content: Content | None,
    who: LocalIdentity | None = None,
    policy: Policy | None = None,
) -> Sealed:
    """A revision of ``asset_id`` in the personal vault, written elsewhere and not yet stored."""
    record, current = personal(vaults)
    revision, chunks = seal_revision(
        who or vaults.identity,
        vault_id=record.vault_id,
        asset_id=asset_id,
        kind="memory",
        parents=parents,
        policy=policy or current,
        epoch_key=record.keys[record.epoch],
        content=content,
    )
    return Sealed(revision.to_bytes(), chunks)


def resign(header: bytes, who: LocalIdentity, **body_changes: object) -> bytes:
    """The header with ``body_changes`` applied and signed again by ``who``'s device."""
    doc = json.loads(header)
    body = {**doc["revision"], **body_changes}
    return canonical_bytes(
        {"revision": body, "signature": b64u_encode(who.device.sign_canonical(body))}
    )


def edited(header: bytes, **body_changes: object) -> bytes:
    """The header with ``body_changes`` applied and the old signature kept."""
    doc = json.loads(header)
    return canonical_bytes({**doc, "revision": {**doc["revision"], **body_changes}})


@pytest.fixture
def memory(vaults: Vaults) -> tuple[str, str, str]:
    """An asset with two stored revisions: (asset id, first revision, second revision)."""
    first = vaults.put(None, "memory", title="Plan", body="v1")
    second = vaults.update(first.asset_id, body="v2")
    return first.asset_id, first.revision, second.revision


# -- the valid path -------------------------------------------------------------------------------


def test_an_exported_revision_is_accepted_again_without_writing_anything(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, first, second = memory
    for revision_id in (first, second):
        header, chunks = vaults.export_revision(revision_id)
        before = vaults.store.seq
        assert vaults.accept(header, chunks) == revision_id
        assert vaults.store.seq == before
    assert vaults.get(asset_id).heads == (second,)


def test_the_revision_id_is_the_tagged_hash_of_the_canonical_signed_header(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    _, first, second = memory
    header, chunks = vaults.export_revision(second)
    doc = json.loads(header)
    assert canonical_bytes(doc) == header
    assert set(doc) == {"revision", "signature"}
    assert tagged_hash(REVISION_TAG, canonical_bytes(doc)) == second
    body = doc["revision"]
    assert body["parents"] == [first] and body["tombstone"] is False
    assert body["ciphertext"] == chunks_digest(chunks)
    assert body["certificate"] == vaults.identity.certificate.to_dict()
    # The signature is the device's, over exactly the body.
    verify_canonical(vaults.identity.certificate.signing_key, body, b64u_decode(doc["signature"]))


def test_a_revision_written_elsewhere_by_an_allowed_device_is_accepted(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, _, second = memory
    sealed = seal(
        vaults,
        asset_id=asset_id,
        parents=(second,),
        content=make_content("memory", title="Plan", body="from elsewhere"),
    )
    revision_id = vaults.accept(sealed.header, sealed.chunks)
    assert revision_id == sealed.revision.id
    view = vaults.get(asset_id)
    assert view.heads == (revision_id,)
    assert view.content is not None and view.content.body == "from elsewhere"
    # A new asset arrives with a parentless revision.
    fresh = seal(
        vaults, asset_id="0" * 31 + "1", parents=(), content=make_content("memory", title="New")
    )
    vaults.accept(fresh.header, fresh.chunks)
    assert "0" * 31 + "1" in {s.id for s in vaults.list_assets()}
    report = vaults.verification()
    assert (report.problems, report.revisions) == ((), 5)


# -- refused, with nothing written ----------------------------------------------------------------


TAMPERINGS: dict[str, Callable[[dict[str, Any], str], dict[str, object]]] = {
    "parents dropped": lambda body, other: {"parents": []},
    "parent replaced": lambda body, other: {"parents": [other]},
    "tombstone flipped": lambda body, other: {"tombstone": True},
    "asset changed": lambda body, other: {"asset": "f" * 32},
    "kind changed": lambda body, other: {"kind": "card"},
    "policy changed": lambda body, other: {"policy": "sha256:" + "0" * 64},
    "epoch changed": lambda body, other: {"epoch": 2},
    "created_at changed": lambda body, other: {"created_at": "2099-01-01T00:00:00.000Z"},
    "ciphertext digest changed": lambda body, other: {"ciphertext": "sha256:" + "1" * 64},
    "size changed": lambda body, other: {"size": body["size"] + 1},
}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_a_tampered_header_with_its_old_signature_is_refused(
    vaults: Vaults, memory: tuple[str, str, str], name: str
) -> None:
    asset_id, first, _ = memory
    sealed = seal(
        vaults,
        asset_id=asset_id,
        parents=(first,),
        content=make_content("memory", title="Fork", body="x"),
    )
    body = json.loads(sealed.header)["revision"]
    changes = TAMPERINGS[name](body, memory[2])
    refused(
        vaults,
        IntegrityError,
        lambda: vaults.accept(edited(sealed.header, **changes), sealed.chunks),
    )
    # The untouched revision is fine: only the tampering was refused.
    vaults.accept(sealed.header, sealed.chunks)
    assert vaults.get(asset_id).conflicted


def test_bad_signature_bytes_are_refused(vaults: Vaults, memory: tuple[str, str, str]) -> None:
    header, chunks = vaults.export_revision(memory[2])
    doc = json.loads(header)
    signature = bytearray(b64u_decode(doc["signature"]))
    signature[10] ^= 0x40
    for bad in (bytes(signature), bytes(signature[:32]), b""):
        tampered = canonical_bytes({**doc, "signature": b64u_encode(bad)})
        refused(vaults, IntegrityError, lambda t=tampered: vaults.accept(t, chunks))


def test_malformed_or_non_canonical_headers_are_refused(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    header, chunks = vaults.export_revision(memory[2])
    doc = json.loads(header)
    for bad in (
        b"",
        b"not json",
        b"[]",
        b"{}",
        json.dumps(doc, indent=1).encode("utf-8"),  # same values, other bytes
        canonical_bytes({**doc, "extra": 1}),
        canonical_bytes({**doc, "revision": {**doc["revision"], "extra": 1}}),
        canonical_bytes({**doc, "revision": {**doc["revision"], "parents": [memory[1]] * 2}}),
    ):
        error = refused(vaults, IntegrityError, lambda b=bad: vaults.accept(b, chunks))
        assert "extra" not in error.message


def test_a_certificate_not_signed_by_its_user_key_is_refused(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, _, second = memory
    me = vaults.identity
    stranger = SigningKey.generate()
    cert = me.certificate
    # Our certificate body, signed by someone else's user key.
    forged = replace(cert, signature=stranger.sign_canonical(cert.body()))
    sealed = seal(
        vaults, asset_id=asset_id, parents=(second,), content=make_content("memory", title="x")
    )
    header = resign(sealed.header, me, certificate=forged.to_dict())
    refused(vaults, IntegrityError, lambda: vaults.accept(header, sealed.chunks))
    # A consistent certificate for this very device, issued by a stranger's user key: the
    # signature checks out, but the vault's policy has no such member.
    unsigned = replace(cert, user_key=stranger.public_bytes(), signature=b"")
    foreign = replace(unsigned, signature=stranger.sign_canonical(unsigned.body()))
    foreign.verify()
    assert foreign.device == me.device_fingerprint
    header = resign(sealed.header, me, certificate=foreign.to_dict())
    refused(vaults, IntegrityError, lambda: vaults.accept(header, sealed.chunks))


def test_a_revision_from_a_device_the_policy_does_not_allow_is_refused(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, _, second = memory
    content = make_content("memory", title="Sneaky")
    # Another user entirely, with the vault's own policy and epoch key.
    stranger = LocalIdentity.generate(device_name="stranger")
    sealed = seal(vaults, asset_id=asset_id, parents=(second,), content=content, who=stranger)
    refused(vaults, IntegrityError, lambda: vaults.accept(sealed.header, sealed.chunks))
    # Our own user on a second device: its certificate is valid, but certificates alone
    # authorize nothing; the vault's policy lists the devices it allows.
    laptop = another_device(vaults.identity)
    laptop.certificate.verify()
    assert laptop.user_fingerprint == vaults.identity.user_fingerprint
    sealed = seal(vaults, asset_id=asset_id, parents=(second,), content=content, who=laptop)
    refused(vaults, IntegrityError, lambda: vaults.accept(sealed.header, sealed.chunks))
    assert vaults.get(asset_id).heads == (second,)


def test_a_revision_of_a_vault_this_device_does_not_have_is_refused(
    vaults: Vaults, tmp_path: Path
) -> None:
    other_path = new_vault_store(tmp_path / "other.db")
    with opened(other_path) as other:
        saved = other.put(None, "memory", title="Elsewhere")
        header, chunks = other.export_revision(saved.revision)
    error = refused(vaults, IntegrityError, lambda: vaults.accept(header, chunks))
    assert "vault" in error.message
    assert vaults.list_assets() == []


def test_a_revision_whose_parent_is_not_in_the_dag_is_refused(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, _, second = memory
    elsewhere = vaults.put(None, "memory", title="Another asset")
    content = make_content("memory", title="x")
    for parents in (
        ("sha256:" + "ab" * 32,),  # nowhere
        (elsewhere.revision,),  # another asset's revision
        (second, "sha256:" + "cd" * 32),  # one known, one not
    ):
        sealed = seal(vaults, asset_id=asset_id, parents=parents, content=content)
        refused(vaults, IntegrityError, lambda s=sealed: vaults.accept(s.header, s.chunks))
    # A new asset cannot begin with a parent, nor with a tombstone.
    orphan = seal(vaults, asset_id="e" * 32, parents=(second,), content=content)
    refused(vaults, IntegrityError, lambda: vaults.accept(orphan.header, orphan.chunks))
    empty = seal(vaults, asset_id="e" * 32, parents=(), content=None)
    refused(vaults, IntegrityError, lambda: vaults.accept(empty.header, empty.chunks))


def test_swapped_truncated_or_undecryptable_chunks_are_refused(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    asset_id, _, second = memory
    big = make_content("memory", title="Big", body="0123456789abcdef" * 20_000)  # two chunks
    sealed = seal(vaults, asset_id=asset_id, parents=(second,), content=big)
    assert len(sealed.chunks) == 2
    _, other_chunks = vaults.export_revision(second)
    first_chunk, last_chunk = sealed.chunks
    for chunks in (
        [last_chunk, first_chunk],  # reordered
        [first_chunk],  # truncated list
        [first_chunk, last_chunk[:-1]],  # truncated chunk
        [first_chunk, last_chunk, last_chunk],  # extended
        other_chunks,  # another revision's chunks
        [first_chunk[:20] + bytes([first_chunk[20] ^ 1]) + first_chunk[21:], last_chunk],
    ):
        refused(vaults, IntegrityError, lambda c=chunks: vaults.accept(sealed.header, c))
    # Chunks that match a validly signed digest but do not decrypt under the vault's keys.
    garbage = [b"\x01" + bytes(60), b"\x01" + bytes(61)]
    header = resign(sealed.header, vaults.identity, ciphertext=chunks_digest(garbage))
    refused(vaults, IntegrityError, lambda: vaults.accept(header, garbage))
    vaults.accept(sealed.header, sealed.chunks)
    assert vaults.get(asset_id).content.body == big.body  # type: ignore[union-attr]


# -- policies -------------------------------------------------------------------------------------


def next_policy(previous: Policy, signer: LocalIdentity, **changes: Any) -> Policy:
    """The entry after ``previous`` with ``changes`` (any field, even seq or prev), signed by
    ``signer``'s device: only the chain rules can refuse it, never the signature."""
    fields: dict[str, Any] = {
        "seq": previous.seq + 1,
        "prev": previous.id,
        "created_at": now(),
        "certificate": signer.certificate,
        "added": (),
        **changes,
    }
    unsigned = replace(previous, signature=b"", **fields)
    return replace(unsigned, signature=signer.device.sign_canonical(unsigned.body()))


def append_policy(vaults: Vaults, policy: Policy) -> None:
    """Store ``policy`` as the next entry of its vault's chain (no checks: as sync would hand it
    over before verification)."""
    record = vaults.resolve_vault(policy.vault_id)
    m = vaults.store.mutation()
    m.put_blob(policy_key(policy.vault_id, policy.seq), policy.to_bytes())
    m.put(
        vault_key(policy.vault_id),
        replace(record, policies=(*record.policies, policy.id)).to_bytes(),
    )
    vaults.store.commit(m, action="test.policy")


def test_every_genesis_policy_verifies_and_names_its_owner_and_device(vaults: Vaults) -> None:
    me = vaults.identity
    for info in vaults.vaults():
        record = vaults.resolve_vault(info.id)
        genesis = load_policy(vaults.store, record, 1)
        genesis.verify(None)
        assert (genesis.seq, genesis.prev, genesis.epoch, genesis.vault_id) == (1, "", 1, info.id)
        assert dict(genesis.members) == {me.user_fingerprint: "owner"}
        assert genesis.devices == (me.device_fingerprint,) and genesis.revoked == ()
        assert genesis.id == tagged_hash("memories.policy", genesis.to_bytes())
        assert Policy.from_bytes(genesis.to_bytes()) == genesis
    report = vaults.verification()
    assert (report.problems, report.policies, report.revisions) == ((), 2, 1)


def test_a_genesis_policy_signed_by_someone_who_is_not_its_owner_is_refused(
    vaults: Vaults,
) -> None:
    _, genesis = personal(vaults)
    stranger = LocalIdentity.generate()
    unsigned = replace(genesis, certificate=stranger.certificate, signature=b"")
    forged = replace(unsigned, signature=stranger.device.sign_canonical(unsigned.body()))
    with pytest.raises(IntegrityError):
        forged.verify(None)
    with pytest.raises(IntegrityError):
        replace(genesis, epoch=2).verify(None)  # the signature no longer covers the body


def test_a_second_policy_entry_must_be_signed_with_authority(vaults: Vaults) -> None:
    me = vaults.identity
    _, genesis = personal(vaults)
    laptop = another_device(me)
    stranger = LocalIdentity.generate()
    members = {**genesis.members, stranger.user_fingerprint: "editor"}
    devices = tuple(sorted((*genesis.devices, laptop.device_fingerprint)))
    # The owner on an allowed device may add a member and a device.
    good = next_policy(genesis, me, members=members, devices=devices, added=(laptop.certificate,))
    good.verify(genesis)
    refusals = {
        "signed by a non-member": next_policy(genesis, stranger, members=members),
        "signed by the owner's unlisted device": next_policy(
            genesis, laptop, devices=devices, added=(laptop.certificate,)
        ),
        "a device without its certificate": next_policy(genesis, me, devices=devices),
        "two owners": next_policy(
            genesis, me, members={**genesis.members, stranger.user_fingerprint: "owner"}
        ),
        "no owner": next_policy(genesis, me, members={stranger.user_fingerprint: "admin"}),
        "wrong predecessor": next_policy(genesis, me, prev="sha256:" + "0" * 64),
        "skipped sequence": next_policy(genesis, me, seq=3),
        "epoch going back": next_policy(genesis, me, epoch=0),
        "other vault": next_policy(genesis, me, vault_id="f" * 32),
    }
    for policy in refusals.values():
        with pytest.raises(IntegrityError):
            policy.verify(genesis)
    # An admin cannot revoke devices or change owners; revocations never shrink.
    with_admin = next_policy(
        genesis,
        me,
        members={**genesis.members, stranger.user_fingerprint: "admin"},
        devices=tuple(sorted((*genesis.devices, stranger.device_fingerprint))),
        device_users={stranger.device_fingerprint: stranger.user_fingerprint},
        added=(stranger.certificate,),
    )
    with_admin.verify(genesis)
    next_policy(
        with_admin, stranger, members={**with_admin.members, "sha256:" + "9" * 64: "editor"}
    ).verify(with_admin)
    with pytest.raises(IntegrityError):
        next_policy(with_admin, stranger, revoked=(me.device_fingerprint,)).verify(with_admin)
    with pytest.raises(IntegrityError):
        next_policy(
            with_admin,
            stranger,
            members={stranger.user_fingerprint: "owner", me.user_fingerprint: "admin"},
        ).verify(with_admin)
    revoking = next_policy(
        with_admin, me, revoked=(laptop.device_fingerprint,), epoch=with_admin.epoch + 1
    )
    revoking.verify(with_admin)
    with pytest.raises(IntegrityError):
        next_policy(revoking, me, revoked=()).verify(revoking)


def test_a_stored_policy_chain_is_verified_entry_by_entry(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    me = vaults.identity
    asset_id, _, second = memory
    _, genesis = personal(vaults)
    laptop = another_device(me)
    devices = tuple(sorted((*genesis.devices, laptop.device_fingerprint)))
    second_policy = next_policy(genesis, me, devices=devices, added=(laptop.certificate,))
    append_policy(vaults, second_policy)
    report = vaults.verification()
    assert (report.problems, report.policies) == ((), 3)
    # Now the laptop is allowed: its revision, written under the new entry, is accepted.
    sealed = seal(
        vaults,
        asset_id=asset_id,
        parents=(second,),
        content=make_content("memory", title="From the laptop"),
        who=laptop,
        policy=second_policy,
    )
    vaults.accept(sealed.header, sealed.chunks)
    assert vaults.history(asset_id)[0].author_device == laptop.device_fingerprint
    # Our own writes now name the new policy head.
    saved = vaults.update(asset_id, body="after")
    header, _ = vaults.export_revision(saved.revision)
    assert json.loads(header)["revision"]["policy"] == second_policy.id
    report = vaults.verification()
    assert (report.problems, report.policies, report.revisions) == ((), 3, 5)
    # A third entry signed by someone without authority poisons the chain.
    stranger = LocalIdentity.generate()
    append_policy(
        vaults, next_policy(second_policy, stranger, members={stranger.user_fingerprint: "owner"})
    )
    assert vaults.verify() == [
        Problem(
            "policy_chain",
            genesis.vault_id,
            None,
            None,
            "policy entry 3: a vault policy entry was signed without authority",
        )
    ]


def test_a_policy_entry_altered_after_signing_is_detected(vaults: Vaults) -> None:
    _, genesis = personal(vaults)
    stranger = LocalIdentity.generate()
    honest = next_policy(genesis, vaults.identity)
    altered = replace(honest, members={**honest.members, stranger.user_fingerprint: "admin"})
    append_policy(vaults, altered)
    assert vaults.verify() == [
        Problem(
            "policy_signature",
            genesis.vault_id,
            None,
            None,
            "policy entry 2's signature does not verify",
        )
    ]


def test_a_tampered_policy_blob_is_detected(store_path: Path) -> None:
    before = blob_rows(store_path)
    with opened(store_path) as vaults:
        made = vaults.create_vault("work")  # writes exactly one blob: its genesis policy
        assert vaults.verify() == []
    [policy_row] = blob_rows(store_path) - before
    flip_row(store_path, policy_row)
    with opened(store_path) as vaults:
        assert vaults.resolve_vault("work").vault_id == made.id
        assert vaults.verify() == [
            Problem(
                "policy_missing", made.id, None, None, "policy entry 1 is missing or unreadable"
            )
        ]
        with pytest.raises(IntegrityError):
            vaults.store.verify()


def test_a_vault_record_pointing_at_another_policy_is_detected(vaults: Vaults) -> None:
    record, _ = personal(vaults)
    m = vaults.store.mutation()
    m.put(vault_key(record.vault_id), replace(record, policies=("sha256:" + "0" * 64,)).to_bytes())
    vaults.store.commit(m, action="test.tamper")
    assert vaults.verify() == [
        Problem(
            "policy_mismatch",
            record.vault_id,
            None,
            None,
            "policy entry 1 is not the entry the vault's chain names",
        )
    ]


# -- known-answer vectors -------------------------------------------------------------------------

VECTOR_NAMES = ["certificate.json", "policy.json", "revision.json"]


def load(name: str) -> Any:
    return json.loads((VECTOR_DIR / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vault_vectors_are_reproduced_byte_for_byte(name: str) -> None:
    committed = (VECTOR_DIR / name).read_text(encoding="utf-8")
    assert render(generate_vault.build_all()[name]) == committed
    assert len(committed.encode("utf-8")) < 50_000


def test_vault_vector_generator_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.vectors.generate_vault", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for name in VECTOR_NAMES:
        assert (tmp_path / name).read_text(encoding="utf-8") == (VECTOR_DIR / name).read_text(
            encoding="utf-8"
        )


def test_certificate_vector_verifies() -> None:
    vector = load("certificate.json")
    certificate = DeviceCertificate.from_dict(vector["certificate"])
    certificate.verify()
    user = SigningKey.from_private_bytes(bytes.fromhex(vector["user_seed"]))
    device = SigningKey.from_private_bytes(bytes.fromhex(vector["device_seed"]))
    assert user.public_bytes().hex() == vector["user_public"] == certificate.user_key.hex()
    assert device.public_bytes().hex() == vector["device_public"] == certificate.signing_key.hex()
    assert certificate.user == vector["user_fingerprint"] == fingerprint(user.public_bytes())
    assert certificate.device == vector["device_fingerprint"]
    assert canonical_bytes(certificate.body()).decode("utf-8") == vector["signed_body"]
    assert user.sign(vector["signed_body"].encode("utf-8")).hex() == vector["signature"]
    for bad in (
        replace(certificate, device_name="another name"),
        replace(certificate, signature=device.sign_canonical(certificate.body())),
    ):
        with pytest.raises(IntegrityError):
            bad.verify()
    with pytest.raises(IntegrityError):
        certificate.verify("2024-12-31T23:59:59.999Z")  # before its validity


def test_policy_vector_verifies() -> None:
    vector = load("policy.json")
    entry = vector["entry"].encode("utf-8")
    policy = Policy.from_bytes(entry)
    policy.verify(None)
    assert policy.to_bytes() == entry
    assert policy.id == vector["id"] == tagged_hash("memories.policy", entry)
    assert canonical_bytes(policy.body()).decode("utf-8") == vector["signed_body"]
    assert policy.signature.hex() == vector["signature"]
    assert policy.certificate.to_dict() == load("certificate.json")["certificate"]
    with pytest.raises(IntegrityError):
        replace(policy, epoch=2).verify(None)


def test_revision_vectors_verify_against_the_policy_and_decrypt() -> None:
    vector = load("revision.json")
    policy = Policy.from_bytes(load("policy.json")["entry"].encode("utf-8"))
    assert vector["policy"] == policy.id
    epoch_key = bytes.fromhex(vector["epoch_key"])
    memory_case, tombstone_case = vector["cases"]
    for case in (memory_case, tombstone_case):
        header = case["header"].encode("utf-8")
        chunks = [bytes.fromhex(chunk) for chunk in case["chunks"]]
        revision = Revision.from_bytes(header)
        revision.verify(policy, chunks)
        assert revision.id == case["id"] == tagged_hash(REVISION_TAG, header)
        assert revision.to_bytes() == header
        assert canonical_bytes(revision.body()).decode("utf-8") == case["signed_body"]
        assert chunks_digest(chunks) == case["chunks_digest"] == revision.ciphertext
        content = open_content(revision, chunks, epoch_key)
        if case["content"] is None:
            assert content is None and revision.tombstone and case["plaintext"] == ""
        else:
            assert content == Content.from_dict(case["content"])
            assert canonical_bytes(case["content"]).decode("utf-8") == case["plaintext"]
        with pytest.raises(IntegrityError):
            open_content(revision, chunks, bytes(32))
        with pytest.raises(IntegrityError):
            revision.verify(policy, chunks[::-1] + chunks)
    assert Revision.from_bytes(tombstone_case["header"].encode("utf-8")).parents == (
        memory_case["id"],
    )
    assert (
        open_content(
            Revision.from_bytes(memory_case["header"].encode("utf-8")),
            [bytes.fromhex(c) for c in memory_case["chunks"]],
            epoch_key,
        )
        == generate_vault.memory_content()
    )


def test_the_production_sealer_writes_the_shape_the_vectors_pin() -> None:
    # seal_revision draws fresh keys and nonces, so compare structure and round trip.
    who = generate_vault.identity()
    policy = generate_vault.genesis(who)
    revision, chunks = seal_revision(
        who,
        vault_id=generate_vault.VAULT_ID,
        asset_id=generate_vault.ASSET_ID,
        kind="memory",
        parents=(),
        policy=policy,
        epoch_key=generate_vault.epoch_key(),
        content=generate_vault.memory_content(),
    )
    revision.verify(policy, chunks)
    pinned = json.loads(load("revision.json")["cases"][0]["header"])
    fresh = json.loads(revision.to_bytes())
    assert set(fresh) == set(pinned)
    assert set(fresh["revision"]) == set(pinned["revision"])
    same = ("t", "v", "vault", "asset", "kind", "parents", "policy", "epoch", "tombstone", "chunks")
    assert {k: fresh["revision"][k] for k in same} == {k: pinned["revision"][k] for k in same}
    assert fresh["revision"]["size"] == pinned["revision"]["size"]
    assert open_content(revision, chunks, generate_vault.epoch_key()) == (
        generate_vault.memory_content()
    )


def test_the_header_is_encoded_as_rfc8785_of_its_dict_with_the_signed_part_once(
    vaults: Vaults, memory: tuple[str, str, str]
) -> None:
    _, first, second = memory
    for revision_id in (first, second):
        header, _ = vaults.export_revision(revision_id)
        revision = Revision.from_bytes(header)
        assert revision.to_bytes() == canonical_bytes(revision.to_dict()) == header
        assert revision.signed_bytes == canonical_bytes(revision.body())


def test_a_certificate_verified_once_is_still_checked_field_by_field(vaults: Vaults) -> None:
    cert = vaults.identity.certificate
    cert.verify()  # now remembered as verified
    assert cert.body() is not cert.body()  # callers get their own copy to change
    for changed in (
        replace(cert, device_name="renamed"),
        replace(cert, not_before="1999-01-01T00:00:00.000Z"),
        replace(cert, exchange_key=SigningKey.generate().public_bytes()),
        replace(cert, signature=bytes(64)),
    ):
        with pytest.raises(IntegrityError):
            changed.verify_signature()
    with pytest.raises(IntegrityError):
        cert.check_window("1999-01-01T00:00:00.000Z")
    cert.verify()


def test_a_certificate_parsed_again_is_the_same_and_any_changed_field_is_parsed_anew(
    vaults: Vaults,
) -> None:
    cert = vaults.identity.certificate
    doc = cert.to_dict()
    assert DeviceCertificate.from_dict(doc) == cert
    assert DeviceCertificate.from_dict(cert.to_dict()) is DeviceCertificate.from_dict(doc)
    renamed = cert.to_dict()
    renamed["certificate"]["device_name"] = "renamed"
    assert DeviceCertificate.from_dict(renamed).device_name == "renamed"
    for bad in (
        {**doc, "certificate": {**doc["certificate"], "extra": "x"}},
        {**doc, "certificate": {**doc["certificate"], "not_before": 5}},
        {**doc, "signature": "not base64!"},
        {**doc, "signature": 5},
    ):
        with pytest.raises(IntegrityError):
            DeviceCertificate.from_dict(bad)
