"""Acknowledge a pass: check the session, validate what arrived, merge it, commit the queue.

Under the service lock. Nothing a transport returned is trusted. A descriptor is verified (form,
certificate, signature) or refused. Then every object the inbox's descriptors announce is judged
against a :class:`~memories.sync.candidate.Candidate` — the state this pass is building — in
dependency order, repeated until nothing more can move:

- a **policy entry** must be the next entry of the vault's chain and follow it by the policy
  rules (signature, certificate, the signer's role in the preceding entry); the epoch keys it
  carries open only from a device the entry allows and never replace a key held. An entry
  that competes with one held is a fork (:mod:`memories.sync.forks`): recorded, never merged;
- a **revision** must name a policy entry of the chain (else it waits for it), come from a
  device the chain's head allows, belong to the current epoch, and pass the vault's complete
  check (id, certificate, signature, ciphertext, parents, decryption). Concurrent edits of one
  asset become conflicts (several heads), never overwrites;
- **audit records** are checked record by record by
  :func:`memories.devices.audit_records.accept_records` against the chain (signer, signature,
  revocation time, no contradiction); one bad record quarantines the object.

What does not verify is quarantined (kept locally with its reason, never merged, never purged);
what only waits for objects, parents or a policy entry stays in the inbox with a persisted retry
delay. When an incoming entry starts a new epoch, this device's own writes under the superseded
epoch made after that entry are taken back out of the vault into the quarantine, as the other
devices will not merge them either.

Everything — merges, quarantine records, the queue state — commits in one transaction; if that
fails nothing changed and the next pass starts over from the same inbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, assert_never

from memories.devices.audit_records import AuditRecord, accept_records
from memories.devices.bundle import certificates_of
from memories.errors import DeniedError, IntegrityError, LockedError
from memories.sync.candidate import Candidate
from memories.sync.engine import Outcome, Plan, load_state, load_targets
from memories.sync.forks import discarded_policy
from memories.sync.objects import (
    Announced,
    AuditAnnounced,
    AuditObject,
    Descriptor,
    PolicyAnnounced,
    RevisionObject,
    object_name,
)
from memories.sync.policy_merge import Item, Verdict, judge_policy
from memories.sync.quarantine import (
    Quarantined,
    discard,
    find_quarantined,
    list_quarantine,
    reapply,
)
from memories.sync.queue import STATE_KEY, InboxEntry, SyncState, backoff, blob_key, quarantine_key
from memories.sync.stored import has_blob
from memories.sync.takeback import take_back
from memories.vault import Vaults
from memories.vault.identity import now
from memories.vault.policy import Policy, check_write
from memories.vault.revision import Revision

__all__ = [
    "Quarantined",
    "Report",
    "ack",
    "discard",
    "find_quarantined",
    "list_quarantine",
    "reapply",
]

log = logging.getLogger(__name__)
_STALE: Final = "the vault was locked during sync; nothing it fetched was imported"
_NOT_ANNOUNCED: Final = "an object is not what its descriptor announces"


@dataclass
class Report:
    target: str
    uploaded: int = 0
    downloaded: int = 0
    merged: int = 0
    policies: int = 0
    audit: int = 0
    quarantined: int = 0
    refused: int = 0
    forks: int = 0
    pending: int = 0
    enqueued: int = 0
    more: bool = False
    error: str | None = None
    vaults: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "enqueued": self.enqueued,
            "up": self.uploaded,
            "down": self.downloaded,
            "merged": self.merged,
            "policies": self.policies,
            "audit": self.audit,
            "quarantined": self.quarantined,
            "refused": self.refused,
            "forks": self.forks,
            "pending": self.pending,
            "more": self.more,
            "error": self.error,
        }


def ack(vaults: Vaults, plan: Plan, outcome: Outcome, *, at: float) -> Report:
    """Commit what ``execute`` did for ``plan``, after checking the session it was made in.

    Raises ``LockedError`` when the store was locked (or locked and unlocked) since ``plan``
    was made: nothing fetched is imported then, and the uploads are simply redone later.
    Raises what ``Store.commit`` raises (nothing of the pass is kept then).
    """
    store = vaults.store
    if not store.unlocked or store.generation != plan.generation:
        raise LockedError(_STALE)
    report = Report(plan.target.id, enqueued=plan.enqueued, error=outcome.error)
    state = load_state(store)
    state.audit_cursor = max(state.audit_cursor, plan.audit_scanned)
    targets = {t.id for t in load_targets(store).items}
    candidate = Candidate(vaults)
    m = candidate.m
    uploaded = set(outcome.uploaded)
    for entry in state.outbox:
        if entry.name in uploaded:
            entry.uploaded.add(plan.target.id)
    report.uploaded = len(uploaded)
    state.compact(targets)
    seen = state.seen.setdefault(plan.target.id, set())
    staged: set[str] = set()
    # Whether an object's bytes are stored, asked once per name: nothing is committed during
    # the pass, stored blobs are never deleted, and what ``prepare`` found missing is still
    # missing while the store has not committed since.
    presence = dict.fromkeys(plan.have, True)
    if store.seq == plan.seq:
        presence.update(dict.fromkeys(plan.absent - plan.have, False))

    def stored(name: str) -> bool:
        found = presence.get(name)
        if found is None:
            found = presence[name] = has_blob(store, blob_key(name))
        return found

    def stash(name: str, data: bytes) -> None:
        if name not in staged and not stored(name):
            m.put_blob(blob_key(name), data)
            staged.add(name)

    for name, data in sorted(outcome.descriptors.items()):
        seen.add(name)
        try:
            Descriptor.from_bytes(data)
        except IntegrityError:
            state.refused += 1
            report.refused += 1
            log.warning("sync: a descriptor did not verify and was refused")
            continue
        stash(name, data)
        state.inbox.setdefault(name, InboxEntry(name))
    report.downloaded = len(outcome.objects)
    descriptors = {
        name: Descriptor.from_bytes(outcome.descriptors.get(name) or store.get_blob(blob_key(name)))
        for name in sorted(state.inbox)
    }
    merger = _Merger(candidate, state, dict(outcome.objects), stash, stored, report)
    finished = merger.run(descriptors)
    # Every fetched object a verified descriptor announces is kept, so a descriptor still
    # waiting never asks for it again (what a refused one named is not stored).
    announced = {object_name(a.oid) for d in descriptors.values() for a in d.objects}
    for name, data in sorted(outcome.objects.items()):
        if name in announced:
            stash(name, data)
    for name in sorted(state.inbox):
        if name in finished:
            del state.inbox[name]
            state.receipts.add(name)
        elif outcome.deferred_listing:
            # The pass's bound, not the storage, left objects behind: due again at once.
            state.inbox[name].next_try = at
        else:
            waiting = state.inbox[name]
            waiting.attempts += 1
            waiting.next_try = at + backoff(waiting.attempts)
    report.pending = len(state.inbox)
    report.more = plan.more_uploads or outcome.deferred_listing
    state.stamps[plan.target.id] = {
        "at": at,
        "up": float(report.uploaded),
        "down": float(report.downloaded),
        "merged": float(report.merged),
        "quarantined": float(report.quarantined),
    }
    m.put(STATE_KEY, state.to_bytes())
    candidate.commit("sync.merge", merged=report.merged, policies=report.policies)
    return report


def _as_sync_reason(message: str) -> str:
    """An audit check's message (written for bundles) as a quarantine reason."""
    return (
        message.removesuffix("; nothing was imported")
        .replace(" in the bundle", "")
        .replace("the bundle holds", "it holds")
    )


class _Merger:
    """Judges every announced object of a pass against one candidate."""

    def __init__(
        self,
        candidate: Candidate,
        state: SyncState,
        objects: dict[str, bytes],
        stash: Callable[[str, bytes], None],
        stored: Callable[[str], bool],
        report: Report,
    ) -> None:
        self.candidate = candidate
        self.state = state
        self.objects = objects
        self.stash = stash
        self.report = report
        self.me = candidate.identity
        self.stored = stored
        self.quarantined: set[str] = set()
        self.epochs: dict[str, int] = {}  # each vault's epoch before this pass
        #: Objects found neither fetched nor stored, with ``policy_changes`` at the time.
        self.absent: dict[str, int] = {}
        self._allowed: dict[str, bool] = {}  # by policy entry id

    def run(self, descriptors: dict[str, Descriptor]) -> set[str]:
        """Merge what can be merged; the names of the descriptors with nothing left waiting."""
        waiting = [
            Item(name, descriptor, announced)
            for name, descriptor in descriptors.items()
            for announced in descriptor.objects
        ]
        for item in waiting:
            record = self.candidate.record(item.descriptor.vault_id)
            if record is not None:
                self.epochs.setdefault(record.vault_id, record.epoch)
        phases: tuple[type, ...] = (PolicyAnnounced, Announced, AuditAnnounced)
        progress = True
        while waiting and progress:
            progress = False
            for phase in phases:
                batch = [i for i in waiting if isinstance(i.announced, phase)]
                if phase is PolicyAnnounced:
                    batch.sort(key=lambda i: i.announced.seq)  # type: ignore[union-attr]
                done: set[int] = set()
                for item in batch:
                    # An object that is not here cannot arrive during the pass: judged again
                    # only if the policy chains changed since (a new entry can end its wait).
                    skipped = self.absent.get(item.announced.oid)
                    if skipped is not None and skipped == self.policy_changes:
                        continue
                    if self._judge(item) == "done":
                        done.add(id(item))
                if done:
                    waiting = [i for i in waiting if id(i) not in done]
                    progress = True
        self._take_back_superseded()
        return set(descriptors) - {item.name for item in waiting}

    @property
    def policy_changes(self) -> int:
        """Changes to the candidate's policy chains so far (entries added or replaced)."""
        return sum(len(added) for added in self.candidate.added_policies.values())

    def _judge(self, item: Item) -> Verdict:
        oid = item.announced.oid
        if oid in self.state.discarded or oid in self.quarantined:
            return "done"
        if self.candidate.m.get(quarantine_key(oid)) is not None:
            return "done"
        if self.candidate.record(item.descriptor.vault_id) is None:
            return "done"  # a vault this device does not hold: not ours to merge
        announced = item.announced
        match announced:
            case PolicyAnnounced():
                return self._policy(item, announced)
            case Announced():
                return self._revision(item, announced)
            case AuditAnnounced():
                return self._audit(item, announced)
            case _:
                assert_never(announced)

    def data(self, oid: str) -> bytes | None:
        name = object_name(oid)
        data = self.objects.get(name)
        if data is None and self.stored(name):
            data = self.candidate.store.get_blob(blob_key(name))
        if data is None:
            self.absent[oid] = self.policy_changes
            return None
        self.stash(name, data)
        return data

    def quarantine(
        self,
        item: Item,
        reason: str,
        *,
        kind: Literal["revision", "policy", "audit"],
        asset: str = "",
        revision: str = "",
    ) -> Verdict:
        entry = Quarantined(
            object=item.announced.oid,
            descriptor=item.name,
            vault=item.descriptor.vault_id,
            asset=asset,
            revision=revision,
            device=item.descriptor.device,
            reason=reason,
            at=now(),
            type=kind,
        )
        self.candidate.m.put(quarantine_key(entry.object), entry.to_bytes())
        self.quarantined.add(entry.object)
        self.report.quarantined += 1
        return "done"

    def _allowed_here(self, policy: Policy) -> bool:
        allowed = self._allowed.get(policy.id)
        if allowed is None:
            allowed = policy.user_of(self.me.device_fingerprint) == self.me.user_fingerprint
            self._allowed[policy.id] = allowed
        return allowed

    # -- policy entries (judged in :mod:`.policy_merge`) ------------------------------------

    def _policy(self, item: Item, announced: PolicyAnnounced) -> Verdict:
        return judge_policy(self, item, announced)

    # -- revisions -------------------------------------------------------------------------

    def _revision(self, item: Item, announced: Announced) -> Verdict:
        candidate = self.candidate
        vault_id = item.descriptor.vault_id
        if announced.revision in self.state.known and candidate.has_revision(announced.revision):
            return "done"
        chain = candidate.chain(vault_id)
        if not self._allowed_here(chain[-1]):
            return "done"  # this device is no longer in the vault: nothing more is merged here
        data = self.data(announced.oid)
        if data is None:
            return "wait"

        def refuse(reason: str) -> Verdict:
            return self.quarantine(
                item, reason, kind="revision", asset=announced.asset, revision=announced.revision
            )

        try:
            obj = RevisionObject.from_bytes(data)
            revision = obj.revision()
        except IntegrityError as exc:
            return refuse(exc.message)
        if (
            revision.id != announced.revision
            or revision.vault_id != vault_id
            or revision.asset_id != announced.asset
            or revision.parents != announced.parents
        ):
            return refuse(_NOT_ANNOUNCED)
        history = candidate.history(revision.kind, revision.asset_id)
        if revision.id in history:
            self.state.known.add(revision.id)
            return "done"
        policy = candidate.policy(vault_id, revision.policy)
        if policy is None:
            if discarded_policy(candidate.m, vault_id, revision.policy) is not None:
                return refuse("written under a policy entry a fork resolution discarded")
            return "wait"  # written under a policy entry that has not arrived yet
        try:
            check_write(chain[-1], item.descriptor.user, item.descriptor.device)
        except DeniedError:
            return refuse("published by a device the vault's current policy does not allow")
        record = candidate.record(vault_id)
        assert record is not None
        if revision.epoch < record.epoch:
            return refuse("written under a superseded permission epoch")
        state = candidate.asset(revision.kind, revision.asset_id)
        if state is not None and state.vault_id != vault_id:
            return refuse("a revision does not match its asset")
        if any(p not in history for p in revision.parents):
            return "wait"
        try:
            revision.verify(policy)
            # Opening the content checks the chunks against the signed header first.
            content = candidate.content(revision, obj.chunks)
            candidate.add_revision(revision, obj.header, obj.chunks, content)
        except IntegrityError as exc:
            return refuse(exc.message)
        self.state.known.add(revision.id)
        self.report.merged += 1
        self.report.vaults.add(vault_id)
        return "done"

    # -- audit records ---------------------------------------------------------------------

    def _audit(self, item: Item, announced: AuditAnnounced) -> Verdict:
        vault_id = item.descriptor.vault_id
        data = self.data(announced.oid)
        if data is None:
            return "wait"

        def refuse(reason: str) -> Verdict:
            return self.quarantine(item, reason, kind="audit")

        try:
            obj = AuditObject.from_bytes(data)
            records = [AuditRecord.from_dict(doc) for doc in obj.records]
        except IntegrityError as exc:
            return refuse(exc.message)
        if obj.vault_id != vault_id or len(obj.records) != announced.records:
            return refuse(_NOT_ANNOUNCED)
        chain = self.candidate.chain(vault_id)
        certificates = certificates_of(chain)
        if any(r.device not in certificates for r in records):
            return "wait"  # signed by a device a policy entry still on its way may allow
        try:
            fresh = accept_records(
                self.candidate.m,
                list(obj.records),
                vault_id=vault_id,
                chain=chain,
                certificates=certificates,
                me=self.me.device_fingerprint,
            )
        except (IntegrityError, DeniedError) as exc:
            return refuse(_as_sync_reason(exc.message))
        for record in fresh:
            self.candidate.m.put(record.key, record.to_bytes())
        self.report.audit += len(fresh)
        return "done"

    # -- this device's writes a new epoch leaves behind --------------------------------------

    def _take_back_superseded(self) -> None:
        """Quarantine this device's writes under an epoch an incoming entry superseded, made
        after that entry: no other device merges them, so neither does this one's view."""
        me = self.me.device_fingerprint
        for vault_id, added in self.candidate.added_policies.items():
            before = self.epochs.get(vault_id, 0)
            rotations = [p for p in added if p.epoch > before]
            if not rotations:
                continue
            epoch = self.candidate.chain(vault_id)[-1].epoch

            def superseded(revision: Revision, rotations: list[Policy] = rotations) -> bool:
                later = [p.created_at for p in rotations if p.epoch > revision.epoch]
                return (
                    revision.author_device == me
                    and bool(later)
                    and (revision.created_at > min(later))
                )

            def why(revision: Revision, epoch: int = epoch) -> str:
                return (
                    f"written on this device under permission epoch {revision.epoch} after the "
                    f"vault moved to epoch {epoch}; the other devices do not merge it"
                )

            taken = take_back(self.candidate, vault_id, superseded, why, self.stash)
            self.quarantined.update(taken)
            self.report.quarantined += len(taken)
