"""Judging one incoming policy object against the candidate chain (part of a pass's merge).

Where the entry fits decides what happens:

- it follows the chain's head: verified by the policy rules and appended, with the epoch keys
  it carries; if it is a fork resolution that keeps this device's branch, the branch it
  discards must be the whole competing branch held here (and is then kept as discarded);
- it competes with an entry held (same predecessor, another id): a **fork** opens — kept
  beside the chain, never merged;
- it follows the open fork's incoming branch: that branch grows; if it is a resolution that
  keeps that branch and discards exactly this device's branch, the chain **adopts** the
  incoming branch and the resolution (this device's branch becomes discarded);
- it follows a discarded entry: only a resolution may (one that competes with the resolution
  held here); it reopens the fork, never merged. Anything else is quarantined;
- its predecessor is not here: it waits.

A resolution that discards only part of a branch, or another branch, fails closed: quarantined,
or kept in the open fork as part of its incoming branch, never merged.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from memories.devices.bundle import open_vault_keys
from memories.errors import IntegrityError
from memories.sync.candidate import Candidate
from memories.sync.forks import (
    Discarded,
    Fork,
    discard_branch,
    discarded_key,
    discarded_policy,
    fork_key,
    load_fork,
)
from memories.sync.objects import Announcement, Descriptor, PolicyAnnounced, PolicyObject
from memories.sync.queue import SyncState
from memories.vault.identity import LocalIdentity, now
from memories.vault.policy import Policy, resolution_problem

__all__ = ["Item", "Pass", "Verdict", "judge_policy"]

Verdict = Literal["done", "wait"]
Kind = Literal["revision", "policy", "audit"]
_NOT_ANNOUNCED = "an object is not what its descriptor announces"


@dataclass
class Item:
    name: str  # the descriptor's name
    descriptor: Descriptor
    announced: Announcement


class _Counts(Protocol):
    policies: int
    forks: int
    quarantined: int
    vaults: set[str]


class Pass(Protocol):
    """What judging needs from the pass that merges."""

    candidate: Candidate
    state: SyncState
    me: LocalIdentity
    quarantined: set[str]

    @property
    def report(self) -> _Counts: ...

    def stash(self, name: str, data: bytes) -> None: ...

    def data(self, oid: str) -> bytes | None: ...

    def quarantine(
        self, item: Item, reason: str, *, kind: Kind, asset: str = "", revision: str = ""
    ) -> Verdict: ...


@dataclass
class _Judging:
    ctx: Pass
    item: Item
    obj: PolicyObject
    chain: list[Policy]
    fork: Fork | None

    @property
    def entry(self) -> Policy:
        return self.obj.entry

    @property
    def vault_id(self) -> str:
        return self.entry.vault_id

    def refuse(self, reason: str) -> Verdict:
        return self.ctx.quarantine(self.item, reason, kind="policy", revision=self.entry.id)

    def allowed_here(self, policy: Policy) -> bool:
        me = self.ctx.me
        return policy.user_of(me.device_fingerprint) == me.user_fingerprint

    def keys(self, held: Mapping[int, bytes]) -> dict[int, bytes] | str:
        """The epoch keys the object carries for this device that ``held`` lacks, or why they
        are refused. Only a publisher the entry allows is believed."""
        entry, publisher = self.entry, self.item.descriptor.certificate
        sealed = self.obj.keys.get(self.ctx.me.device_fingerprint)
        if (
            sealed is None
            or entry.user_of(publisher.device) != publisher.user
            or publisher.device in entry.revoked
        ):
            return {}
        try:
            opened = open_vault_keys(
                self.ctx.me, sealed, sender=publisher.signing_key, vault_id=self.vault_id
            )
        except IntegrityError:
            return "the epoch keys it carries for this device do not open"
        fresh = {}
        for epoch, key in opened.items():
            have = held.get(epoch)
            if epoch > entry.epoch or (have is not None and not hmac.compare_digest(have, key)):
                return "it carries an epoch key that contradicts the one held here"
            if have is None:
                fresh[epoch] = key
        return fresh

    def problem(self, previous: Policy) -> str | None:
        """Whether the entry may follow ``previous``; a resolution also by its own rules."""
        entry = self.entry
        try:
            entry.verify(previous)
        except IntegrityError as exc:
            return f"a policy entry does not verify: {exc.message}"
        if not entry.discarded:
            return None
        discarded = self.obj.discarded
        base = self.find(discarded[0].prev)
        if base is None:
            return "it resolves a fork of a policy history this device does not hold"
        return resolution_problem(base, previous, entry, discarded)

    def find(self, policy_id: str) -> Policy | None:
        """An entry this device holds by id: in the chain, the open fork or the discarded."""
        for entry in self.chain:
            if entry.id == policy_id:
                return entry
        for entry in self.fork.branch if self.fork is not None else ():
            if entry.id == policy_id:
                return entry
        return discarded_policy(self.ctx.candidate.m, self.vault_id, policy_id)

    def base_keys(self, base: Policy) -> dict[int, bytes]:
        record = self.ctx.candidate.record(self.vault_id)
        assert record is not None
        return {e: k for e, k in record.keys.items() if e <= base.epoch}

    def save(self, fork: Fork) -> None:
        self.ctx.candidate.m.put(fork_key(self.vault_id), fork.to_bytes())
        self.fork = fork

    def merged(self, *entries: Policy) -> Verdict:
        self.ctx.state.known.update(p.id for p in entries)
        self.ctx.report.policies += len(entries)
        self.ctx.report.vaults.add(self.vault_id)
        return "done"

    def discard(
        self, entries: Sequence[Policy], resolution: Policy, keys: Mapping[int, bytes]
    ) -> None:
        taken = discard_branch(
            self.ctx.candidate, self.vault_id, entries, resolution, keys, self.ctx.stash
        )
        self.ctx.state.known.update(p.id for p in entries)
        self.ctx.quarantined.update(taken)
        self.ctx.report.quarantined += len(taken)


def judge_policy(ctx: Pass, item: Item, announced: PolicyAnnounced) -> Verdict:
    """Merge, fork, wait for or quarantine the policy object ``announced``."""
    candidate = ctx.candidate
    vault_id = item.descriptor.vault_id
    chain = candidate.chain(vault_id)
    if announced.seq <= len(chain) and chain[announced.seq - 1].id == announced.policy:
        return "done"  # held already
    data = ctx.data(announced.oid)
    if data is None:
        return "wait"
    try:
        obj = PolicyObject.from_bytes(data)
    except IntegrityError as exc:
        return ctx.quarantine(item, exc.message, kind="policy", revision=announced.policy)
    entry = obj.entry
    if (entry.id, entry.seq, entry.vault_id) != (announced.policy, announced.seq, vault_id):
        return ctx.quarantine(item, _NOT_ANNOUNCED, kind="policy", revision=announced.policy)
    fork = load_fork(candidate.m, vault_id)
    j = _Judging(ctx, item, obj, chain, fork)
    if fork is not None and entry.id in {p.id for p in fork.branch}:
        return "done"
    if discarded_policy(candidate.m, vault_id, entry.id) is not None:
        return "done"  # a resolution discarded it already
    head = chain[-1]
    if entry.prev == head.id and entry.seq == head.seq + 1:
        return _follows_head(j)
    if 2 <= entry.seq <= len(chain) and chain[entry.seq - 2].id == entry.prev:
        return _competes(j, chain[entry.seq - 2])
    if fork is not None and fork.branch[-1].id == entry.prev:
        return _follows_fork(j, fork)
    if discarded_policy(candidate.m, vault_id, entry.prev) is not None:
        return _follows_discarded(j)
    return "wait"  # its predecessor has not arrived (or a branch of the fork's branch)


def _follows_head(j: _Judging) -> Verdict:
    entry, head = j.entry, j.chain[-1]
    candidate = j.ctx.candidate
    record = candidate.record(j.vault_id)
    assert record is not None
    discarded = j.obj.discarded
    fork = j.fork
    closes = False
    if discarded:
        base = discarded[0].prev
        if fork is not None and fork.base == base:
            held = [p.id for p in fork.branch]
            if entry.discarded[: len(held)] != tuple(held):
                return j.refuse("it discards another branch than the one this device holds")
            if len(held) > len(entry.discarded):
                return j.refuse(
                    "it discards only part of the competing branch; the fork stays open"
                )
            closes = True
    problem = j.problem(head)
    if problem is not None:
        return j.refuse(problem)
    keys = j.keys(record.keys)
    if isinstance(keys, str):
        return j.refuse(keys)
    if j.allowed_here(entry) and entry.epoch not in record.keys and entry.epoch not in keys:
        return j.refuse(
            f"it starts permission epoch {entry.epoch} but carries no key of it for this device"
        )
    candidate.add_policy(entry, keys)
    if discarded:
        branch_keys = fork.keys if closes and fork is not None else {}
        j.discard(discarded, entry, branch_keys)
        if not closes and fork is not None:
            j.save(fork)  # a resolution of another fork: this vault's own stays open
    return j.merged(entry)


def _competes(j: _Judging, base: Policy) -> Verdict:
    """The entry follows ``base`` in the chain, where another entry follows it here."""
    fork = j.fork
    if fork is not None:
        if fork.base == base.id and fork.branch[0].id == j.entry.id:
            return "done"
        return "wait"  # another fork of the vault is open: judged once that one is resolved
    problem = j.problem(base)
    if problem is not None:
        return j.refuse(problem)
    keys = j.keys(j.base_keys(base))
    if isinstance(keys, str):
        return j.refuse(keys)
    j.save(Fork(j.vault_id, base.id, base.seq, (j.entry,), keys, now()))
    j.ctx.report.forks += 1
    return "done"


def _follows_fork(j: _Judging, fork: Fork) -> Verdict:
    entry, chain = j.entry, j.chain
    base = chain[fork.base_seq - 1]
    ours = chain[fork.base_seq :]
    held = {**j.base_keys(base), **fork.keys}
    if entry.discarded and entry.discarded == tuple(p.id for p in ours):
        return _adopt(j, fork, base, ours, held)
    problem = j.problem(fork.branch[-1])
    if problem is not None:
        return j.refuse(problem)
    keys = j.keys(held)
    if isinstance(keys, str):
        return j.refuse(keys)
    grown = {e: k for e, k in keys.items() if e > base.epoch}
    j.save(replace(fork, branch=(*fork.branch, entry), keys={**fork.keys, **grown}))
    if entry.discarded:
        j.ctx.report.forks += 1  # a resolution this device's branch has outgrown: stays open
    return "done"


def _adopt(
    j: _Judging, fork: Fork, base: Policy, ours: Sequence[Policy], held: Mapping[int, bytes]
) -> Verdict:
    """A resolution that keeps the incoming branch and discards exactly this device's."""
    entry = j.entry
    problem = j.problem(fork.branch[-1])
    if problem is not None:
        return j.refuse(problem)
    keys = j.keys(held)
    if isinstance(keys, str):
        return j.refuse(keys)
    adopted = {**fork.keys, **{e: k for e, k in keys.items() if e > base.epoch}}
    if j.allowed_here(entry):
        needed = {p.epoch for p in (*fork.branch, entry) if p.epoch > base.epoch}
        if not needed <= set(adopted):
            return j.refuse(
                "it keeps a branch whose epoch keys this device does not hold; the fork stays open"
            )
    record = j.ctx.candidate.record(j.vault_id)
    assert record is not None
    ours_keys = {e: k for e, k in record.keys.items() if e > base.epoch}
    j.ctx.candidate.replace_chain(j.vault_id, fork.base_seq, (*fork.branch, entry), adopted)
    j.discard(ours, entry, ours_keys)
    return j.merged(*fork.branch, entry)


def _follows_discarded(j: _Judging) -> Verdict:
    """Only a resolution may follow a discarded entry: one competing with the resolution held
    here. It reopens the fork (the branch back to the chain, then it); never merged."""
    entry, candidate = j.entry, j.ctx.candidate
    if not entry.discarded:
        return j.refuse("it follows a policy entry a fork resolution discarded")
    if j.fork is not None:
        return "wait"
    path: list[Discarded] = []
    ids = {p.id: p for p in j.chain}
    cursor = entry.prev
    while cursor not in ids:
        data = candidate.m.get(discarded_key(j.vault_id, cursor))
        if data is None or len(path) > len(j.chain) + 64:
            return "wait"
        record = Discarded.from_bytes(data)
        path.append(record)
        cursor = record.entry.prev
    path.reverse()
    base = ids[cursor]
    branch = tuple(d.entry for d in path)
    problem = j.problem(branch[-1])
    if problem is not None:
        return j.refuse(problem)
    held = {**j.base_keys(base), **{e: k for d in path for e, k in d.keys.items()}}
    keys = j.keys(held)
    if isinstance(keys, str):
        return j.refuse(keys)
    fork_keys = {e: k for e, k in {**held, **keys}.items() if e > base.epoch}
    j.save(Fork(j.vault_id, base.id, base.seq, (*branch, entry), fork_keys, now()))
    j.ctx.report.forks += 1
    return "done"
