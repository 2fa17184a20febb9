"""Taking revisions back out of a vault's current state into the quarantine.

Two events leave revisions this device holds outside what the other devices merge: an incoming
entry that starts a new epoch (this device's writes under the old epoch made after it) and a
fork resolution that discards the branch some revisions were written under. Their asset states
are rebuilt from the rest of the history (:meth:`~memories.sync.candidate.Candidate.drop_revisions`)
and each revision gets a quarantine entry with an empty descriptor, so the user can review,
reapply or discard it like any other. Nothing is deleted: the blobs stay, and the revision's
object is kept in the sync blobs for review.

Only what nothing else builds on is taken back: a revision some kept revision names as a parent
stays (another device merged and extended it, so dropping it would orphan that work).
"""

from __future__ import annotations

from collections.abc import Callable

from memories.sync.candidate import Candidate
from memories.sync.objects import RevisionObject, object_id, object_name
from memories.sync.quarantine import Quarantined
from memories.sync.queue import quarantine_key
from memories.vault.identity import now
from memories.vault.records import chunk_key, revision_key
from memories.vault.revision import Revision

__all__ = ["take_back"]


def take_back(
    candidate: Candidate,
    vault_id: str,
    wanted: Callable[[Revision], bool],
    reason: Callable[[Revision], str],
    stash: Callable[[str, bytes], None],
) -> list[str]:
    """Take every ``wanted`` revision of the vault out of its asset's current state into the
    quarantine (``reason`` says why); returns their object ids.

    Raises ``IntegrityError`` when the history that remains does not decrypt.
    """
    taken: list[str] = []
    for key, _ in candidate.store.entries("asset/"):
        _, kind, asset_id = key.split("/", 2)
        state = candidate.asset(kind, asset_id)
        if state is None or state.vault_id != vault_id:
            continue
        # Heads merged in this very pass are others' and fit the new state: not looked at.
        stored = [h for h in state.heads if candidate.store.has_blob(revision_key(h))]
        if not any(wanted(candidate.vaults._revision(h)) for h in stored):
            continue
        history = candidate.history(kind, asset_id)
        children: dict[str, set[str]] = {rid: set() for rid in history}
        for rid, revision in history.items():
            for parent in revision.parents:
                children.setdefault(parent, set()).add(rid)
        dropped = {rid for rid, revision in history.items() if wanted(revision)}
        changed = True
        while changed:
            changed = False
            for rid in list(dropped):
                if children[rid] - dropped:
                    dropped.discard(rid)
                    changed = True
        if not dropped:
            continue
        for rid in sorted(dropped):
            revision = history[rid]
            chunks = tuple(candidate.m.get_blob(chunk_key(rid, i)) for i in range(revision.chunks))
            data = RevisionObject(revision.to_bytes(), chunks).to_bytes()
            oid = object_id(data)
            stash(object_name(oid), data)
            entry = Quarantined(
                object=oid,
                descriptor="",
                vault=vault_id,
                asset=asset_id,
                revision=rid,
                device=revision.author_device,
                reason=reason(revision),
                at=now(),
                type="revision",
            )
            candidate.m.put(quarantine_key(oid), entry.to_bytes())
            taken.append(oid)
        candidate.drop_revisions(kind, asset_id, dropped)
    return taken
