"""Commit observers: what one vault commit changed, told to whoever subscribed.

The search index and synchronization subscribe here instead of polling the store. Observers are
called after the commit is durable, in the committing thread, in subscription order. An observer
that raises cannot undo or fail the commit: its error is logged by type only (the error's text
could quote content) and the remaining observers still run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from memories.views.kinds import Kind

__all__ = [
    "ACTIONS",
    "Action",
    "AssetChange",
    "CommitEvent",
    "CommitObserver",
    "Observers",
    "Unsubscribe",
]

log = logging.getLogger(__name__)

#: Every kind of vault commit; the checkpoint of the commit records the same name.
Action: TypeAlias = Literal[
    "vault.create",
    "card_type.define",
    "asset.put",
    "asset.update",
    "asset.tombstone",
    "asset.resolve",
    "link.add",
    "link.remove",
    "revision.accept",
    "secret.protect",
    "otp.advance",
    "run.bind",
    "device.approve",
    "policy.change",
    "bundle.import",
    "sync.merge",
    "sync.quarantine.reapply",
    "sync.fork.resolve",
]
ACTIONS: tuple[Action, ...] = (
    "vault.create",
    "card_type.define",
    "asset.put",
    "asset.update",
    "asset.tombstone",
    "asset.resolve",
    "link.add",
    "link.remove",
    "revision.accept",
    "secret.protect",
    "otp.advance",
    "run.bind",
    "device.approve",
    "policy.change",
    "bundle.import",
    "sync.merge",
    "sync.quarantine.reapply",
    "sync.fork.resolve",
)


@dataclass(frozen=True)
class AssetChange:
    """One asset a commit changed."""

    asset_id: str
    vault_id: str
    kind: Kind
    revision: str | None  # the revision the commit added; None when only links changed


@dataclass(frozen=True)
class CommitEvent:
    """What one durable commit changed: ids and kinds only, never content."""

    seq: int  # the store sequence number of the commit
    action: Action
    vaults: frozenset[str]  # every vault the commit touched (the assets' vaults included)
    assets: tuple[AssetChange, ...]
    policies_changed: bool  # a policy entry was added: access and keys may differ now

    @property
    def asset_ids(self) -> frozenset[str]:
        return frozenset(change.asset_id for change in self.assets)

    @classmethod
    def of(
        cls,
        seq: int,
        action: Action,
        assets: Iterable[AssetChange] = (),
        *,
        vaults: Iterable[str] = (),
        policies_changed: bool = False,
    ) -> CommitEvent:
        changes = tuple(assets)
        touched = frozenset(vaults) | {change.vault_id for change in changes}
        return cls(seq, action, touched, changes, policies_changed)


CommitObserver: TypeAlias = Callable[[CommitEvent], None]
Unsubscribe: TypeAlias = Callable[[], None]


class Observers:
    """The subscribed observers of one vault domain object."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        # Keyed by a fresh token per subscription, so the same callback may subscribe twice and
        # each unsubscribe removes exactly its own subscription.
        self._subscribed: dict[object, CommitObserver] = {}

    def subscribe(self, observer: CommitObserver) -> Unsubscribe:
        """Call ``observer`` after every commit from now on; returns the function that stops it
        (idempotent)."""
        token = object()
        with self._guard:
            self._subscribed[token] = observer

        def unsubscribe() -> None:
            with self._guard:
                self._subscribed.pop(token, None)

        return unsubscribe

    def notify(self, event: CommitEvent) -> None:
        """Tell every observer about ``event``. Never raises an observer's ``Exception``."""
        with self._guard:
            observers = list(self._subscribed.values())
        for observer in observers:
            try:
                observer(event)
            except Exception as exc:  # an observer's failure must not surface as a commit failure
                log.error("a commit observer failed (%s)", type(exc).__name__)

    def clear(self) -> None:
        """Drop every subscription."""
        with self._guard:
            self._subscribed.clear()

    def __len__(self) -> int:
        with self._guard:
            return len(self._subscribed)
