"""Handlers for synchronization and the quarantine.

``sync_now`` runs as a chain of deferred steps, one per target: under the service lock it
enqueues and plans (:func:`memories.sync.engine.prepare`), without the lock it does the
transport I/O (:func:`memories.sync.engine.execute`), and under the lock again it acknowledges
(:func:`memories.sync.merge.ack`), which refuses a plan from an earlier unlock session. The
service itself also refuses to finish deferred work across a lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_never

from memories.devices.pairing import vault_chain
from memories.errors import ConflictError, MemoriesError, NotFoundError, UsageError
from memories.service.access import Access
from memories.service.audit import record_failure
from memories.service.core import Core
from memories.service.deferred import Deferred
from memories.service.requests.sync import (
    QuarantineDiscardRequest,
    QuarantineListRequest,
    QuarantineReapplyRequest,
    QuarantineShowRequest,
    SyncAddRequest,
    SyncForksRequest,
    SyncNowRequest,
    SyncRemoveRequest,
    SyncRequest,
    SyncResolveForkRequest,
    SyncStatusRequest,
)
from memories.sync.engine import Outcome, execute, load_state, load_targets, prepare
from memories.sync.forks import list_forks, resolve_fork
from memories.sync.merge import ack, discard, find_quarantined, list_quarantine, reapply
from memories.sync.queue import TARGETS_KEY, Target, Targets
from memories.sync.transports import check_remote, open_transport
from memories.vault.identity import now

__all__ = ["BACKGROUND_NAMESPACE", "handle"]

#: The caller the daemon's periodic sync uses; its requests are not user activity.
BACKGROUND_NAMESPACE = "daemon:sync"


def handle(core: Core, request: SyncRequest, access: Access) -> dict[str, Any]:
    match request:
        case SyncAddRequest():
            return _add(core, request)
        case SyncRemoveRequest():
            return _remove(core, request)
        case SyncStatusRequest():
            return _status(core)
        case SyncNowRequest():
            return _now(core, request, access)
        case QuarantineListRequest():
            return {"quarantine": [q.to_dict() for q in list_quarantine(core.domain().store)]}
        case QuarantineShowRequest():
            return {"quarantined": find_quarantined(core.domain().store, request.ref).to_dict()}
        case QuarantineReapplyRequest():
            return {"reapplied": reapply(core.domain(), request.ref).to_dict()}
        case QuarantineDiscardRequest():
            return {"discarded": discard(core.domain().store, request.ref).to_dict()}
        case SyncForksRequest():
            return {"forks": _forks(core)}
        case SyncResolveForkRequest():
            return {"resolved": resolve_fork(core.domain(), request.vault, request.keep).to_dict()}
        case _:
            assert_never(request)


def _location(kind: str, location: str) -> str:
    """Raises ``UsageError`` for a relative or odd path, or a malformed rclone target."""
    if kind == "rclone":
        return check_remote(location.strip())
    if "\x00" in location or not Path(location).is_absolute():
        raise UsageError("a sync folder must be an absolute path")
    path = Path(location)
    if path.exists() and not path.is_dir():
        raise UsageError("that path is a file, not a folder")
    return str(path.resolve())


def _add(core: Core, request: SyncAddRequest) -> dict[str, Any]:
    store = core.domain().store
    location = _location(request.kind, request.location)
    targets = load_targets(store)
    if any(t.kind == request.kind and t.location == location for t in targets.items):
        raise ConflictError("that sync target is added already; `memories sync status` lists them")
    target = Target(Targets.new_id(), request.kind, location, now())
    m = store.mutation()
    m.put(TARGETS_KEY, Targets((*targets.items, target)).to_bytes())
    store.commit(m, action="sync.target.add", details={"kind": request.kind})
    return {"target": target.to_dict()}


def _find(targets: Targets, ref: str) -> Target:
    wanted = ref.strip()
    for target in targets.items:
        if wanted in (target.id, target.location):
            return target
    resolved = str(Path(wanted).resolve()) if Path(wanted).is_absolute() else None
    for target in targets.items:
        if resolved is not None and target.location == resolved:
            return target
    raise NotFoundError("no sync target matches that; `memories sync status` lists them")


def _remove(core: Core, request: SyncRemoveRequest) -> dict[str, Any]:
    store = core.domain().store
    targets = load_targets(store)
    target = _find(targets, request.target)
    m = store.mutation()
    m.put(TARGETS_KEY, Targets(tuple(t for t in targets.items if t != target)).to_bytes())
    store.commit(m, action="sync.target.remove", details={"kind": target.kind})
    return {"removed": target.to_dict()}


def _status(core: Core) -> dict[str, Any]:
    store = core.domain().store
    state = load_state(store)
    targets = []
    for target in load_targets(store).items:
        stamp = state.stamps.get(target.id)
        targets.append({**target.to_dict(), "last": None if stamp is None else stamp})
    return {
        "targets": targets,
        "outbox": len(state.outbox),
        "inbox": len(state.inbox),
        "receipts": len(state.receipts),
        "quarantined": len(list_quarantine(store)),
        "forks": len(list_forks(store)),
        "refused": state.refused,
        "interval_minutes": _interval(core),
    }


def _forks(core: Core) -> list[dict[str, Any]]:
    vaults = core.domain()
    me = vaults.identity
    found = []
    for fork in list_forks(vaults.store):
        record = vaults.resolve_vault(fork.vault_id)
        chain = vault_chain(vaults.store, record)
        heads = [chain[-1], fork.branch[-1]]
        owner = all(
            h.members.get(me.user_fingerprint) == "owner"
            and h.user_of(me.device_fingerprint) == me.user_fingerprint
            for h in heads
        )
        found.append({**fork.view(chain), "name": record.name, "can_resolve": owner})
    return found


def _interval(core: Core) -> float:
    return core.settings.sync_interval_minutes


_COUNTS = (
    "up",
    "down",
    "merged",
    "policies",
    "audit",
    "quarantined",
    "refused",
    "forks",
    "pending",
    "enqueued",
)


def _now(core: Core, request: SyncNowRequest, access: Access) -> dict[str, Any]:
    store = core.domain().store
    targets = load_targets(store)
    if not targets.items:
        raise NotFoundError(
            "there is no sync target; add one with `memories sync add folder PATH` "
            "or `memories sync add rclone REMOTE:PATH`"
        )
    chosen = [_find(targets, request.target)] if request.target else list(targets.items)
    reports: list[dict[str, Any]] = []

    def start(index: int) -> None:
        target = chosen[index]
        plan = prepare(core.domain(), target, at=core.now())
        transport = open_transport(target.kind, target.location)

        def work() -> Outcome:
            return execute(plan, transport)

        def finish(outcome: Outcome, _access: Access) -> dict[str, Any]:
            reports.append(ack(core.domain(), plan, outcome, at=core.now()).to_dict())
            if index + 1 < len(chosen):
                start(index + 1)
                return {}
            totals: dict[str, Any] = {k: sum(int(r[k]) for r in reports) for k in _COUNTS}
            totals["more"] = any(r["more"] for r in reports)
            return {"targets": reports, **totals}

        def failed(error: MemoriesError) -> None:
            record_failure(core.store, "sync_now", error, access.caller)

        core.deferred = Deferred(work, finish, failed)

    start(0)
    return {}
