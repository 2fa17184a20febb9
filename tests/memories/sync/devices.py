"""Separate devices in one process: a desk and devices paired with it (each its own store, keys
and certificate), syncing through any transport with the engine's three steps."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.devices.membership import change_policy
from memories.devices.pairing import approve, issue_request, join, read_request, vault_chain
from memories.sync.engine import execute, prepare
from memories.sync.merge import Report, ack
from memories.sync.objects import Descriptor, PolicyAnnounced, object_id
from memories.sync.queue import TARGETS_KEY, Targets
from memories.sync.transports import Transport
from memories.vault import Vaults
from memories.vault.identity import LocalIdentity
from memories.vault.policy import Policy
from tests.memories.devices.support import LOCAL_CONFIG, new_join_store, new_store, opened
from tests.memories.sync.support import TARGET
from tests.memories.vault.support import another_device


def pair(desk: Path, path: Path, name: str) -> Path:
    """A new store at ``path`` joined to ``desk``'s user (allowed in every shared vault)."""
    new_join_store(path, name)
    with opened(desk) as v:
        approver = v.identity.device_fingerprint
    with opened(path) as v:
        issued = issue_request(v.store, approver=approver)
    with opened(desk) as v:
        approval = approve(v, read_request(issued.text), confirmed_fingerprint=issued.fingerprint)
    with opened(path) as v:
        join(v.store, approval, local_config=LOCAL_CONFIG)
    return path


def household(root: Path, *names: str) -> dict[str, Path]:
    """The desk (``olga``'s first store) and one paired device per name."""
    desk = new_store(root / "desk.db", "olga")
    found = {"desk": desk}
    for name in names:
        found[name] = pair(desk, root / f"{name}.db", name)
    return found


@contextmanager
def device(path: Path) -> Iterator[Vaults]:
    with opened(path) as v:
        if v.store.get(TARGETS_KEY) is None:
            m = v.store.mutation()
            m.put(TARGETS_KEY, Targets((TARGET,)).to_bytes())
            v.store.commit(m, action="sync.target.add")
        yield v


def sync_vaults(v: Vaults, transport: Transport, *, at: float = 0.0) -> Report:
    """Passes until nothing more is offered; the counts of all of them."""
    total = Report(TARGET.id)
    for _ in range(50):
        plan = prepare(v, TARGET, at=at)
        report = ack(v, plan, execute(plan, transport), at=at)
        for name in ("merged", "policies", "audit", "quarantined", "refused", "forks"):
            setattr(total, name, getattr(total, name) + getattr(report, name))
        total.pending = report.pending
        if not report.more:
            break
    return total


def sync(path: Path, transport: Transport, *, at: float = 0.0) -> Report:
    with device(path) as v:
        return sync_vaults(v, transport, at=at)


def titles(path: Path, vault: str | None = None) -> set[str]:
    with opened(path) as v:
        return {a.title for a in v.list_assets(vault=vault)}


def publish(transport: Transport, by: LocalIdentity, obj: bytes, entry: Policy) -> None:
    """Put a policy object and a descriptor announcing it (signed by ``by``) into storage."""
    oid = object_id(obj)
    descriptor = Descriptor.sign(by, entry.vault_id, [PolicyAnnounced(oid, entry.id, entry.seq)])
    data = descriptor.to_bytes()
    transport.put(f"objects/{oid}", obj)
    transport.put(f"descriptors/{object_id(data)}", data)


def allow_new_device(v: Vaults, vault: str | None = None) -> Policy:
    """A policy change: this device's user allows one more (idle) device of theirs."""
    record = v.resolve_vault(vault)
    head = vault_chain(v.store, record)[-1]
    newcomer = another_device(v.identity)
    devices = {**head.users_by_device(), newcomer.device_fingerprint: v.identity.user_fingerprint}
    return change_policy(v, vault, devices=devices, certificates=(newcomer.certificate,))
