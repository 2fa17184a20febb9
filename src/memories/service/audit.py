"""Audit records the service writes: read intents before delivery, failure outcomes after.

Both are store checkpoints (hash-chained, encrypted), so they share the audit trail with every
change. Details carry ids, op names, error codes and the caller's namespace, never content,
titles, passwords or secrets.

- A *read intent* is committed before plaintext leaves the service (in groups: see
  :mod:`memories.service.intents`). When it cannot be written the read is denied: no record,
  no delivery.
- A *failure* (``<op>.failed``) is recorded for write and elevation requests that fail. It is
  best effort: when even that cannot be written (the disk is the likely reason the request
  failed), only the error type is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from memories.errors import LockedError, MemoriesError
from memories.service.access import Caller
from memories.store import Checkpoint, Store

__all__ = [
    "READ_INTENT",
    "audit_entry",
    "failure_action",
    "read_details",
    "record_failure",
]

log = logging.getLogger(__name__)

READ_INTENT: Final = "read.intent"


def failure_action(op: str) -> str:
    """The checkpoint action recording that ``op`` failed."""
    return f"{op}.failed"


def read_details(op: str, asset: str, caller: Caller, **ids: str) -> dict[str, str | int | bool]:
    """What a read intent for ``asset`` records: the op, the ids and the caller, no content."""
    details: dict[str, str | int | bool] = {"op": op, "asset": asset, "caller": caller.namespace}
    details.update(ids)
    return details


def record_failure(store: Store | None, op: str, error: MemoriesError, caller: Caller) -> None:
    """Record that ``op`` failed with ``error`` (its code only), if the store can take it.

    Only for requests that declare ``audit_failures``. Never raises: a failure to record is
    logged by error type and otherwise ignored.
    """
    if store is None or not store.unlocked:
        return
    try:
        store.record_intent(
            failure_action(op), {"op": op, "code": error.code, "caller": caller.namespace}
        )
    except LockedError:
        return
    except MemoriesError as exc:  # recording is best effort; the original error is what matters
        log.warning("could not record a failed %s: %s", op, type(exc).__name__)


def audit_entry(checkpoint: Checkpoint) -> Mapping[str, object]:
    """A checkpoint as ``audit_list`` shows it: ``{seq, at, action, details}``, plus
    ``{problem, reason}`` for an entry that is damaged, missing or not chained."""
    entry: dict[str, object] = {
        "seq": checkpoint.seq,
        "at": checkpoint.at,
        "action": checkpoint.action,
        "details": dict(checkpoint.details),
    }
    if checkpoint.problem:
        entry["problem"] = checkpoint.problem
        entry["reason"] = checkpoint.reason
    return entry
