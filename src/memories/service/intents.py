"""Read intents committed in groups: durable before delivery, one fsync for many readers.

A content read computes its answer under the service lock and *files* an intent here instead
of committing it on the spot. Before the answer leaves the service, the reader waits until its
intent is durable: the first waiter becomes the flusher. It takes the service lock just long
enough to drain every filed intent and seal them as one batch (the store takes its own I/O lock
then, see :meth:`memories.store.Store.stage_intents`), releases the service lock, and runs the
batch's one transaction and fsync without it. While that fsync runs other readers take the
service lock, compute, file theirs and sleep; when the flush ends its flusher wakes the readers
it settled and hands the next flush to one still waiting, which takes the rest together. Taking
the service lock to drain is deliberate: the readers computing ahead of the flusher join its
batch, and a batch of many costs one transaction's CPU instead of many. One reader alone pays
what it paid before (one commit); sixteen pay about one commit per batch, and their computing
overlaps the disk's work instead of waiting behind it.

A front end that answers many requests at once (``Service.begin``) settles the whole batch's
tickets in one call (:meth:`IntentQueue.settle`), which is one flush when nothing else is filed.

A mutation that arrives during the fsync waits for it at the store's I/O lock and is planned on
the root the batch left. The promise is unchanged: no plaintext is delivered before its intent
is durable, and when the intents cannot be written every reader in the batch is denied (memory
stays at what is on disk, so the store remains usable). Locking waits for a batch being written
(the store's lock takes the I/O lock) and settles whatever is still filed with ``LockedError``,
so nothing is delivered across a lock; the generation check in ``Service.deliver`` refuses an
answer that was settled just before a lock but is sent after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from memories.errors import DeniedError, MemoriesError

__all__ = ["IntentQueue", "Ticket"]

Details = Mapping[str, str | int | bool]

_UNSETTLED = "delivery denied: the audit record could not be written"


def _held_lock() -> threading.Lock:
    """A plain lock, already held: its next ``acquire`` sleeps until someone releases it."""
    held = threading.Lock()
    held.acquire()
    return held


@dataclass(eq=False)
class Ticket:
    """One filed intent: settled once with the checkpoint seq it got, or with an error.

    Waiting happens on the queue's condition (see :meth:`IntentQueue.wait`), so a ticket is a
    plain record: the flag is set last, after the outcome it announces.
    """

    action: str
    details: Details
    seq: int | None = None
    error: MemoriesError | None = None
    _settled: bool = field(default=False, repr=False)

    @property
    def settled(self) -> bool:
        return self._settled

    def settle(self, *, seq: int | None = None, error: MemoriesError | None = None) -> None:
        if self._settled:
            return
        self.seq, self.error = seq, error
        self._settled = True


@dataclass(eq=False)
class _Sleeper:
    """A reader waiting while a flush runs: woken once, when its ticket is settled or when it
    is handed the next flush."""

    ticket: Ticket
    wake: threading.Lock = field(default_factory=_held_lock)
    flushes: bool = False


class IntentQueue:
    """Intents filed under the service lock and waiting for the next group commit.

    ``file`` and ``settle_all`` must be called with the service lock held; ``wait`` must be
    called without it.

    At most one caller flushes at a time. The others sleep, each on its own lock; when a flush
    ends, its flusher wakes exactly the readers whose tickets it settled and hands the next
    flush to one reader still waiting, so nobody wakes only to sleep again and a reader whose
    batch was written never queues behind the next one.
    """

    def __init__(self) -> None:
        self._pending: list[Ticket] = []
        self._state = threading.Lock()  # guards the two below
        self._flushing = False
        self._sleepers: list[_Sleeper] = []

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
        commit: Callable[[Sequence[Ticket]], Callable[[], None] | None],
    ) -> None:
        """Return once every ticket is settled; raise the first error one was settled with.

        ``lock`` is the service lock. ``commit`` is called with it held and the batch of every
        filed intent; it either settles them all itself (returning None) or returns the part
        of the work that must run without the service lock (the write and its fsync), which is
        called right after the lock is released and must settle each of them.

        Raises:
            MemoriesError: what a ticket was settled with (``DeniedError`` when the batch could
                not be written, ``LockedError`` when the store locked first).
        """
        self.settle(tickets, lock=lock, commit=commit)
        for ticket in tickets:
            if ticket.error is not None:
                raise ticket.error

    def settle(
        self,
        tickets: Sequence[Ticket],
        *,
        lock: AbstractContextManager[object],
        commit: Callable[[Sequence[Ticket]], Callable[[], None] | None],
    ) -> None:
        """Return once every ticket is settled, durable or with its error; see :meth:`wait`."""
        for ticket in tickets:
            while self._await_turn(ticket):
                self._flush(lock, commit)

    def _await_turn(self, ticket: Ticket) -> bool:
        """False once ``ticket`` is settled; True when this caller is to run the next flush."""
        with self._state:
            if ticket.settled:
                return False
            if not self._flushing:
                self._flushing = True
                return True
            sleeper = _Sleeper(ticket)
            self._sleepers.append(sleeper)
        sleeper.wake.acquire()  # released by the flusher that settles it or hands over
        return sleeper.flushes

    def _flush(
        self,
        lock: AbstractContextManager[object],
        commit: Callable[[Sequence[Ticket]], Callable[[], None] | None],
    ) -> None:
        batch: list[Ticket] = []
        try:
            with lock:
                batch, self._pending = self._pending, []
                finish = commit(batch) if batch else None
            if finish is not None:
                finish()
        finally:
            # A bug in the flush must not leave readers waiting for ever: whatever it did not
            # settle is denied, never delivered.
            for drained in batch:
                drained.settle(error=DeniedError(_UNSETTLED))
            self._hand_over()

    def _hand_over(self) -> None:
        """Wake the settled sleepers; give the next flush to one unsettled sleeper, if any."""
        with self._state:
            sleepers, self._sleepers = self._sleepers, []
            successor: _Sleeper | None = None
            for sleeper in sleepers:
                if sleeper.ticket.settled:
                    sleeper.wake.release()
                elif successor is None:
                    successor = sleeper
                else:
                    self._sleepers.append(sleeper)
            if successor is None:
                self._flushing = False  # nobody sleeps now: every sleeper was settled
            else:
                successor.flushes = True  # the flush stays marked as running, for it
                successor.wake.release()
