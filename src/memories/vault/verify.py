"""Vault-level verification: every record the vault domain keeps, checked and reported.

:func:`verify_vaults` reads everything afresh from the store (never from the domain's caches, so
a cache cannot hide damage) and checks:

- this device's identity and its certificate, and the device state's vault references;
- every vault's policy chain: each entry stored, the one the chain names, signed, its
  certificate valid, following its predecessor (linear, revocations kept, authorized), and the
  vault's epoch and epoch keys matching it;
- every asset's revision DAG from its heads: each revision stored, the one its id names,
  belonging to the asset, signed by a valid certificate, written under a policy of the chain
  that let its device write, with every parent present and its chunks present, matching the
  signed digest, and decrypting and authenticating under their epoch key;
- that the asset record agrees with that DAG (heads, newest head, count, tombstone, summary)
  and that its links point at existing cards of its vault.

It never stops at the first problem; each :class:`~memories.views.verify.Problem` names the
vault, asset and revision concerned by id and says what is wrong without quoting content. The
blob keys it meets on the way are returned too, so the store's own check can tell blobs nothing
refers to (orphans) from referenced ones it lacks.

Rarely read records get the same scrutiny: the device-only vault's chain and history are
checked like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memories.crypto import tagged_hash, wipe
from memories.errors import DeniedError, IntegrityError
from memories.store import Store
from memories.vault.assets import AssetState
from memories.vault.content import KINDS, Content
from memories.vault.identity import DeviceCertificate
from memories.vault.operations import load_identity
from memories.vault.policy import POLICY_TAG, Policy, check_write
from memories.vault.records import (
    LOCAL_KEY,
    LocalState,
    VaultRecord,
    asset_prefix,
    chunk_key,
    policy_key,
    revision_key,
)
from memories.vault.revision import REVISION_TAG, Revision, open_content
from memories.views.verify import Problem, ProblemKind

__all__ = ["Verification", "verify_vaults"]


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify_vaults`."""

    problems: tuple[Problem, ...]
    referenced_blobs: frozenset[str]  # every blob key a record refers to, present or not
    vaults: int
    policies: int  # policy entries that were read
    assets: int
    revisions: int  # revisions that were read

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        """JSON form (the referenced keys are left out: they are for the store's check)."""
        return {
            "ok": self.ok,
            "problems": [problem.to_dict() for problem in self.problems],
            "vaults": self.vaults,
            "policies": self.policies,
            "assets": self.assets,
            "revisions": self.revisions,
        }


def verify_vaults(store: Store) -> Verification:
    """Check every vault record of the unlocked ``store``; see the module docstring.

    Raises ``LockedError`` when the store is locked. Damage is reported, never raised.
    """
    return _Verifier(store).run()


class _Verifier:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.problems: list[Problem] = []
        self.referenced: set[str] = set()
        self.records: dict[str, VaultRecord] = {}
        self.policies: dict[str, dict[str, Policy]] = {}  # vault id -> policy id -> entry
        self.assets: dict[str, AssetState] = {}
        self.policy_count = 0
        self.revision_count = 0
        # Certificate signatures already checked: one device signs many records, and checking
        # its certificate once per record would dominate the cost of a large store.
        self.certificates: dict[DeviceCertificate, bool] = {}

    def certificate_valid(self, certificate: DeviceCertificate, at: str) -> bool:
        """Whether ``certificate`` verifies and was valid at ``at``."""
        signed = self.certificates.get(certificate)
        if signed is None:
            try:
                certificate.verify_signature()
                signed = True
            except IntegrityError:
                signed = False
            self.certificates[certificate] = signed
        if not signed:
            return False
        try:
            certificate.check_window(at)
        except IntegrityError:
            return False
        return True

    def problem(
        self,
        kind: ProblemKind,
        message: str,
        *,
        vault: str | None = None,
        asset: str | None = None,
        revision: str | None = None,
    ) -> None:
        self.problems.append(Problem(kind, vault, asset, revision, message))

    def run(self) -> Verification:
        self.check_identity()
        self.load_vaults()
        self.check_local_state()
        for record in self.records.values():
            self.check_policies(record)
        self.load_assets()
        for state in self.assets.values():
            self.check_asset(state)
        return Verification(
            problems=tuple(self.problems),
            referenced_blobs=frozenset(self.referenced),
            vaults=len(self.records),
            policies=self.policy_count,
            assets=len(self.assets),
            revisions=self.revision_count,
        )

    # -- device records ----------------------------------------------------------------------

    def check_identity(self) -> None:
        try:
            identity = load_identity(self.store)
        except IntegrityError as exc:
            self.problem("identity", f"this device's identity cannot be read ({exc.message})")
            return
        try:
            identity.certificate.verify()
        except IntegrityError:
            self.problem("identity", "this device's certificate does not verify")

    def load_vaults(self) -> None:
        for key, value in self.store.entries("vault/"):
            vault_id = key.removeprefix("vault/")
            try:
                record = VaultRecord.from_bytes(value)
            except IntegrityError:
                self.problem("record", "the vault record is malformed", vault=vault_id)
                continue
            if record.vault_id != vault_id:
                self.problem("record", "the vault record names another vault", vault=vault_id)
                continue
            self.records[vault_id] = record

    def check_local_state(self) -> None:
        data = self.store.get(LOCAL_KEY)
        if data is None:
            self.problem("record", "the device state is missing")
            return
        try:
            local = LocalState.from_bytes(data)
        except IntegrityError:
            self.problem("record", "the device state is malformed")
            return
        if local.personal not in self.records:
            self.problem("record", "the personal vault is missing", vault=local.personal)
        for vault_id in local.local_vaults:
            record = self.records.get(vault_id)
            if record is None:
                self.problem("record", "a device-only vault is missing", vault=vault_id)
            elif not record.local:
                self.problem(
                    "record",
                    "a device-only vault is not marked local in its record",
                    vault=vault_id,
                )
        for record in self.records.values():
            if record.local and record.vault_id not in local.local_vaults:
                self.problem(
                    "record",
                    "a vault marked local is not one of this device's device-only vaults",
                    vault=record.vault_id,
                )

    # -- policies ----------------------------------------------------------------------------

    def check_policies(self, record: VaultRecord) -> None:
        vault = record.vault_id
        known: dict[str, Policy] = {}
        self.policies[vault] = known
        if not record.policies:
            self.problem("policy_missing", "the vault has no policy entries", vault=vault)
            return
        previous: Policy | None = None
        linked = True  # whether ``previous`` is the entry just before this one
        for seq, expected in enumerate(record.policies, start=1):
            policy = self.read_policy(record, seq, expected)
            if policy is None:
                previous, linked = None, False
                continue
            known[policy.id] = policy
            where = f"policy entry {seq}"
            if not self.certificate_valid(policy.certificate, policy.created_at):
                self.problem(
                    "certificate",
                    f"{where} is signed by an invalid device certificate",
                    vault=vault,
                )
            try:
                policy.verify_signature()
            except IntegrityError:
                self.problem(
                    "policy_signature", f"{where}'s signature does not verify", vault=vault
                )
            if linked or seq == 1:
                try:
                    policy.verify_follows(previous if seq > 1 else None)
                except IntegrityError as exc:
                    self.problem("policy_chain", f"{where}: {exc.message}", vault=vault)
            previous, linked = policy, True
        self.check_epochs(record, known, previous if linked else None)

    def read_policy(self, record: VaultRecord, seq: int, expected: str) -> Policy | None:
        vault = record.vault_id
        key = policy_key(vault, seq)
        self.referenced.add(key)
        try:
            data = self.store.get_blob(key)
        except IntegrityError:
            self.problem(
                "policy_missing", f"policy entry {seq} is missing or unreadable", vault=vault
            )
            return None
        self.policy_count += 1
        adopted = policy_key(vault, seq, expected)
        if tagged_hash(POLICY_TAG, data) != expected and self.store.has_blob(adopted):
            # A fork resolution adopted this entry; the plain key keeps the discarded one.
            self.referenced.add(adopted)
            try:
                data = self.store.get_blob(adopted)
            except IntegrityError:
                self.problem(
                    "policy_missing", f"policy entry {seq} is missing or unreadable", vault=vault
                )
                return None
        if tagged_hash(POLICY_TAG, data) != expected:
            self.problem(
                "policy_mismatch",
                f"policy entry {seq} is not the entry the vault's chain names",
                vault=vault,
            )
            return None
        try:
            policy = Policy.from_stored(data, expected)
        except IntegrityError:
            self.problem("policy_mismatch", f"policy entry {seq} is malformed", vault=vault)
            return None
        if policy.vault_id != vault or policy.seq != seq:
            self.problem(
                "policy_chain",
                f"policy entry {seq} belongs to another vault or position",
                vault=vault,
            )
            return None
        return policy

    def check_epochs(
        self, record: VaultRecord, known: Mapping[str, Policy], newest: Policy | None
    ) -> None:
        vault = record.vault_id
        if newest is not None and newest.epoch != record.epoch:
            self.problem(
                "epoch",
                f"the vault is at epoch {record.epoch} but its newest policy at epoch "
                f"{newest.epoch}",
                vault=vault,
            )
        for epoch in sorted({p.epoch for p in known.values()} | {record.epoch}):
            if epoch not in record.keys:
                self.problem("epoch", f"the vault holds no key for epoch {epoch}", vault=vault)

    # -- assets ------------------------------------------------------------------------------

    def load_assets(self) -> None:
        for kind in KINDS:
            prefix = asset_prefix(kind)
            for key, value in self.store.entries(prefix):
                asset_id = key.removeprefix(prefix)
                try:
                    state = AssetState.from_bytes(value)
                except IntegrityError:
                    self.problem("record", "the asset record is malformed", asset=asset_id)
                    continue
                if state.asset_id != asset_id or state.kind != kind:
                    self.problem(
                        "record",
                        "the asset record is filed under another id or kind",
                        vault=state.vault_id,
                        asset=asset_id,
                    )
                    continue
                self.assets[asset_id] = state

    def check_asset(self, state: AssetState) -> None:
        vault, asset = state.vault_id, state.asset_id
        record = self.records.get(vault)
        if record is None:
            self.problem("record", "the asset's vault does not exist", vault=vault, asset=asset)
            return
        seen, absent, damaged = self.walk(state)
        newest: Content | None = None
        for revision_id, revision in seen.items():
            content = self.check_revision(record, revision_id, revision)
            if revision_id == state.newest:
                newest = content
            for parent in revision.parents:
                if parent in absent:
                    self.problem(
                        "parent_missing",
                        f"parent {parent} is missing or unreadable",
                        vault=vault,
                        asset=asset,
                        revision=revision_id,
                    )
        for head in state.heads:
            if head in absent:
                self.problem(
                    "revision_missing",
                    "a head revision is missing or unreadable",
                    vault=vault,
                    asset=asset,
                    revision=head,
                )
        self.check_heads(state, seen, newest, complete=not absent and not damaged)
        self.check_links(state)

    def walk(self, state: AssetState) -> tuple[dict[str, Revision], set[str], set[str]]:
        """The revisions reachable from the heads that were read intact, the ids that could not
        be read at all, and the ids read but damaged (reported here)."""
        seen: dict[str, Revision] = {}
        absent: set[str] = set()
        damaged: set[str] = set()
        pending = list(state.heads)
        while pending:
            revision_id = pending.pop()
            if revision_id in seen or revision_id in absent or revision_id in damaged:
                continue
            try:
                revision = self.read_revision(state, revision_id)
            except IntegrityError:
                absent.add(revision_id)
                continue
            if revision is None:
                damaged.add(revision_id)
                continue
            seen[revision_id] = revision
            pending.extend(revision.parents)
        return seen, absent, damaged

    def read_revision(self, state: AssetState, revision_id: str) -> Revision | None:
        """The stored revision, or None when it is damaged (reported here).

        Raises ``IntegrityError`` when it cannot be read at all: the caller reports that, as it
        knows whether a head or a parent was lost.
        """
        where = {"vault": state.vault_id, "asset": state.asset_id, "revision": revision_id}
        key = revision_key(revision_id)
        self.referenced.add(key)
        data = self.store.get_blob(key)
        self.revision_count += 1
        try:
            revision = Revision.from_bytes(data)
        except IntegrityError:
            self.problem("revision_mismatch", "the stored revision is malformed", **where)
            return None
        # Its chunks are referenced even when the header is damaged: they are not orphans.
        self.referenced.update(chunk_key(revision_id, i) for i in range(max(0, revision.chunks)))
        if tagged_hash(REVISION_TAG, data) != revision_id:
            self.problem(
                "revision_mismatch", "the stored revision is not the one its id names", **where
            )
            return None
        vars(revision)["id"] = revision_id  # checked above
        if (
            revision.asset_id != state.asset_id
            or revision.vault_id != state.vault_id
            or revision.kind != state.kind
        ):
            self.problem(
                "revision_mismatch",
                "the revision belongs to another asset, vault or kind",
                **where,
            )
            return None
        return revision

    def check_revision(
        self, record: VaultRecord, revision_id: str, revision: Revision
    ) -> Content | None:
        """Check one revision read intact; returns its content when it decrypted (None for a
        tombstone or when it did not)."""
        vault = record.vault_id
        where = {"vault": vault, "asset": revision.asset_id, "revision": revision_id}
        if not self.certificate_valid(revision.certificate, revision.created_at):
            self.problem(
                "certificate", "the revision's device certificate does not verify", **where
            )
        try:
            revision.verify_signature()
        except IntegrityError:
            self.problem("revision_signature", "the revision's signature does not verify", **where)
        policy = self.policies.get(vault, {}).get(revision.policy)
        if policy is None:
            self.problem(
                "revision_policy",
                "the revision names a policy entry the vault's chain does not hold",
                **where,
            )
        else:
            if revision.epoch != policy.epoch:
                self.problem(
                    "revision_policy",
                    f"the revision claims epoch {revision.epoch} under a policy of epoch "
                    f"{policy.epoch}",
                    **where,
                )
            try:
                check_write(policy, revision.author_user, revision.author_device)
            except DeniedError:
                self.problem(
                    "revision_policy",
                    "the revision was signed by a device or user its policy does not let write",
                    **where,
                )
        return self.check_content(record, revision_id, revision)

    def check_content(
        self, record: VaultRecord, revision_id: str, revision: Revision
    ) -> Content | None:
        where = {"vault": record.vault_id, "asset": revision.asset_id, "revision": revision_id}
        chunks: list[bytes] = []
        for index in range(revision.chunks):
            try:
                chunks.append(self.store.get_blob(chunk_key(revision_id, index)))
            except IntegrityError:
                self.problem("content", f"content chunk {index} is missing or unreadable", **where)
                return None
        try:
            revision.verify_chunks(chunks)
        except IntegrityError:
            self.problem("content", "the content chunks do not match the signed digest", **where)
            return None
        stored_key = record.keys.get(revision.epoch)
        if stored_key is None:
            self.problem(
                "epoch",
                f"the vault holds no key for the revision's epoch {revision.epoch}",
                **where,
            )
            return None
        key = bytearray(stored_key)
        try:
            return open_content(revision, chunks, key)
        except IntegrityError:
            self.problem("content", "the content does not decrypt and authenticate", **where)
            return None
        finally:
            wipe(key)

    # -- asset records against their DAG -----------------------------------------------------

    def check_heads(
        self,
        state: AssetState,
        seen: Mapping[str, Revision],
        content: Content | None,
        *,
        complete: bool,
    ) -> None:
        where = {"vault": state.vault_id, "asset": state.asset_id}
        named = {parent for revision in seen.values() for parent in revision.parents}
        for head in state.heads:
            if head in named:
                self.problem(
                    "heads",
                    "a recorded head is a parent of another revision",
                    revision=head,
                    **where,
                )
        if state.newest not in state.heads:
            self.problem(
                "heads", "the newest revision is not a head", revision=state.newest, **where
            )
            return
        newest = seen.get(state.newest)
        if newest is not None and newest.tombstone != state.tombstone:
            self.problem(
                "heads",
                "the deleted flag disagrees with the newest revision",
                revision=state.newest,
                **where,
            )
        if complete and state.revisions != len(seen):
            self.problem(
                "heads",
                f"the record counts {state.revisions} revisions; the history holds {len(seen)}",
                **where,
            )
        if content is not None and not _summary_matches(state, content):
            self.problem(
                "heads",
                "the summary disagrees with the newest revision's content",
                revision=state.newest,
                **where,
            )

    def check_links(self, state: AssetState) -> None:
        for link in state.links:
            target = self.assets.get(link.target)
            if link.source != state.asset_id:
                message = "a link recorded on this card starts at another asset"
            elif target is None:
                message = f"a link points at {link.target}, which does not exist"
            elif target.vault_id != state.vault_id:
                message = f"a link points at {link.target}, which is in another vault"
            else:
                continue
            self.problem("link", message, vault=state.vault_id, asset=state.asset_id)


def _summary_matches(state: AssetState, content: Content) -> bool:
    return (state.title, state.tags, state.card_type, state.private) == (
        content.title,
        content.tags,
        content.card_type,
        content.private,
    )
