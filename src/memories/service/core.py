"""The service's state and what every handler shares.

:class:`Core` holds the open store, the vault domain over it, the elevation table and the lock
generation. It is not thread-safe on its own: :class:`~memories.service.service.Service` calls
it only under the service lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from memories.config import Settings
from memories.errors import LockedError, MemoriesError, NotFoundError, UnauthorizedError
from memories.rag import RagRuntime
from memories.search import SearchCache
from memories.service.access import (
    LOCKED_MESSAGE,
    NO_STORE_MESSAGE,
    AssetFacts,
    Caller,
    Elevation,
    StoreState,
)
from memories.service.audit import READ_INTENT, read_details
from memories.service.deferred import Deferred
from memories.service.grant_records import GrantBook
from memories.service.grants import Grant
from memories.service.intents import IntentQueue, Ticket
from memories.service.transfers import Transfers
from memories.store import KdfCost, Store
from memories.vault import Saved, Vaults

__all__ = ["Core"]

log = logging.getLogger(__name__)


class Core:
    """Store, vault domain, elevations and lock generation of one service."""

    def __init__(
        self,
        settings: Settings,
        *,
        kdf_cost: KdfCost | None,
        clock: Callable[[], float],
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.kdf_cost = kdf_cost
        #: Wall-clock seconds since the epoch: grant creation and expiry are calendar times.
        self.now = wall_clock
        self.elevation = Elevation(clock)
        self.store: Store | None = None
        self.generation = 0
        self.intents = IntentQueue()
        #: Intents the request being handled filed; the service waits for them after it.
        self.request_tickets: list[Ticket] = []
        #: Files being uploaded or downloaded in chunks; dropped at lock.
        self.transfers = Transfers(clock, max_file_bytes=settings.max_file_bytes)
        #: Model endpoints and embedders (configured by ``[rag]``); loaded on first use.
        self.rag = RagRuntime(settings.rag)
        #: The in-memory search indexes and vectors; cleared at lock.
        self.search = SearchCache(
            embedders=self.rag.embedders, rrf_k=self.rag.rrf_k, fusion=self.rag.fusion
        )
        #: Slow work the request being handled left to run outside the service lock.
        self.deferred: Deferred[Any] | None = None
        self._vaults: Vaults | None = None
        self._grants: GrantBook | None = None
        if settings.store_path.exists():
            self.store = Store.open(settings.store_path)

    @property
    def state(self) -> StoreState:
        store = self.store
        if store is None:
            return "absent"
        return "unlocked" if store.unlocked else "locked"

    def require_store(self) -> Store:
        """Raises ``NotFoundError`` when there is no store yet."""
        if self.store is None:
            raise NotFoundError(NO_STORE_MESSAGE)
        return self.store

    def domain(self) -> Vaults:
        """The vault domain of the unlocked store. Raises ``NotFoundError`` / ``LockedError``."""
        store = self.require_store()
        if not store.unlocked:
            raise LockedError(LOCKED_MESSAGE)
        if self._vaults is None:
            self._vaults = Vaults(store, max_file_bytes=self.settings.max_file_bytes)
        return self._vaults

    def lock_now(self) -> None:
        """Drop keys, plaintext caches and every elevation; advance the generation."""
        store = self.store
        was_unlocked = store is not None and store.unlocked
        vaults, self._vaults = self._vaults, None
        if vaults is not None:
            vaults.close()
        grants, self._grants = self._grants, None
        if grants is not None:
            grants.forget()
        if store is not None:
            store.lock()
        self.elevation.clear()
        self.transfers.clear()
        self.search.clear()
        self.intents.settle_all(LockedError(LOCKED_MESSAGE))
        if was_unlocked:
            self.generation += 1

    def grants(self) -> GrantBook:
        """The grant records of the unlocked store. Raises ``NotFoundError`` / ``LockedError``."""
        store = self.require_store()
        if not store.unlocked:
            raise LockedError(LOCKED_MESSAGE)
        if self._grants is None:
            self._grants = GrantBook(store)
        return self._grants

    def current_grant(self, grant: Grant) -> Grant:
        """``grant`` as its stored record says now; the check before every MCP request.

        A grant without an id was composed in-process and is returned as it is.

        Raises:
            LockedError: the store is locked (grants can be read only while it is unlocked).
            UnauthorizedError: the grant is gone, revoked or expired, or there is no store.
        """
        if grant.id is None:
            return grant
        store = self.store
        if store is None:
            raise UnauthorizedError()
        if not store.unlocked:
            raise LockedError(LOCKED_MESSAGE)
        record = self.grants().get(grant.id)
        if record is None or not record.live(self.now()):
            raise UnauthorizedError()
        return record.grant()

    def saved(self, saved: Saved) -> dict[str, Any]:
        """A ``Saved`` answer with the asset's short id."""
        return {**saved.to_dict(), "short_id": self.domain().short_id(saved.asset_id)}

    def intend_read(self, op: str, asset: str, caller: Caller, **ids: str) -> None:
        """File a read intent for ``asset``; the answer waits until it is durable."""
        self.require_store()
        details = read_details(op, asset, caller, **ids)
        self.request_tickets.append(self.intents.file(READ_INTENT, details))

    def commit_intents(self, batch: Sequence[Ticket]) -> Callable[[], None] | None:
        """Seal ``batch`` as one store transaction; returns the write, to run without the lock.

        Called under the service lock. The store's I/O lock is held from here until the
        returned function ends, so nothing else commits or locks in between; that function
        writes the batch (one fsync) and settles every ticket before it lets go. A ticket is
        settled with ``LockedError`` when the store is locked, with ``DeniedError`` when the
        batch cannot be written (nothing of it may be delivered). Returns None when every
        ticket is settled already.
        """
        store = self.store
        if store is None or not store.unlocked:
            for ticket in batch:
                ticket.settle(error=LockedError(LOCKED_MESSAGE))
            return None
        try:
            staged = store.stage_intents([(t.action, t.details) for t in batch])
        except MemoriesError as exc:
            for ticket in batch:
                ticket.settle(error=exc)
            return None

        def write() -> None:
            with staged:  # settled before the I/O lock goes: a lock waits for them
                try:
                    seqs = staged.write()
                except MemoriesError as exc:  # DeniedError: nothing of the batch is delivered
                    for ticket in batch:
                        ticket.settle(error=exc)
                    return
                for ticket, seq in zip(batch, seqs, strict=True):
                    ticket.settle(seq=seq)

        return write

    # -- the authorizer's directory -------------------------------------------------------------

    def vault_role(self, ref: str | None) -> tuple[str, str]:
        return self.domain().vault_role(ref)

    def asset_facts(self, ref: str) -> AssetFacts:
        state = self.domain().resolve_asset(ref)
        return AssetFacts(vault_id=state.vault_id, kind=state.kind, private=state.private)
