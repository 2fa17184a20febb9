"""Read intents committed in groups: durable before delivery, one fsync for many readers.

A content read computes its answer under the service lock and *files* an intent here instead
of committing it on the spot. Before the answer leaves the service, the reader waits until its
intent is durable: the first waiter becomes the flusher, takes the service lock again and
commits every filed intent in one store transaction (one fsync), then settles them all. While
that fsync runs, other readers queue on the service lock, compute and file theirs, and the next
flush takes them together. One reader alone pays what it paid before (one commit); sixteen pay
about one commit per batch.

The promise is unchanged: no plaintext is delivered before its intent is durable, and when the
intents cannot be written every reader in the batch is denied. Locking settles whatever is still
filed with ``LockedError``, so nothing is delivered across a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from memories.errors import MemoriesError

__all__ = ["IntentQueue", "Ticket"]

Details = Mapping[str, str | int | bool]


@dataclass(eq=False)
class Ticket:
    """One filed intent: settled once with the checkpoint seq it got, or with an error."""

    action: str
    details: Details
    seq: int | None = None
    error: MemoriesError | None = None
    _settled: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    def settle(self, *, seq: int | None = None, error: MemoriesError | None = None) -> None:
        if self._settled.is_set():
            return
        self.seq, self.error = seq, error
        self._settled.set()


class IntentQueue:
    """Intents filed under the service lock and waiting for the next group commit.

    ``file``, ``drain`` and ``settle_all`` must be called with the service lock held;
    ``wait`` must be called without it.
    """

    def __init__(self) -> None:
        self._pending: list[Ticket] = []
        self._flusher = threading.Lock()

    def file(self, action: str, details: Details) -> Ticket:
        ticket = Ticket(action=action, details=dict(details))
        self._pending.append(ticket)
        return ticket

    def settle_all(self, error: MemoriesError) -> None:
        """Settle every filed intent with ``error`` (the store locked or closed)."""
        pending, self._pending = self._pending, []
        for ticket in pending:
            ticket.settle(error=error)

    def wait(
        self,
        tickets: Sequence[Ticket],
        *,
        lock: AbstractContextManager[object],
        commit: Callable[[Sequence[Ticket]], None],
    ) -> None:
        """Return once every ticket is settled; raise the first error one was settled with.

        ``lock`` is the service lock. ``commit`` is called with it held and the batch of every
        filed intent; it must settle each of them.

        Raises:
            MemoriesError: what a ticket was settled with (``DeniedError`` when the batch could
                not be written, ``LockedError`` when the store locked first).
        """
        for ticket in tickets:
            while not ticket.settled:
                with self._flusher:
                    if ticket.settled:
                        break
                    with lock:
                        batch, self._pending = self._pending, []
                        if batch:
                            commit(batch)
            if ticket.error is not None:
                raise ticket.error
