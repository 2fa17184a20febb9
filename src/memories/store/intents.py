"""Intent batches: checkpoints without state changes, sealed now and written a moment later.

:meth:`~memories.store.store.Store.stage_intents` seals a batch while its caller holds its own
lock and returns a :class:`StagedIntents` that holds the store's I/O lock; the caller releases
its lock and calls :meth:`StagedIntents.write`, which runs the transaction and its fsync. Memory
follows only once the transaction is durable, so a batch that cannot be written leaves the store
exactly as it is on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType

from memories.errors import DeniedError, LockedError, MemoriesError
from memories.store.checkpoints import Checkpoint, Detail, chain_hash
from memories.store.records import Root, StoreKeys

__all__ = ["StagedIntents", "denied", "now", "seal_intents"]

Items = Sequence[tuple[str, Mapping[str, Detail]]]


def now() -> str:
    """A checkpoint's time: RFC 3339 UTC with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def denied(exc: MemoriesError) -> DeniedError:
    """The error a reader gets when its intent cannot be written: no record, no delivery."""
    return DeniedError(f"delivery denied: the audit record could not be written ({exc.message})")


def seal_intents(
    keys: StoreKeys, old_root: Root, genesis: str, items: Items
) -> tuple[list[tuple[int, bytes]], Root, bytes]:
    """Seal ``items`` as checkpoints chained after ``old_root``; returns rows, root, sealed root.

    ``genesis`` is the oldest checkpoint's hash ("" when there is none yet). Raises
    ``LockedError`` when the keys were wiped, ``UsageError`` for details with no canonical form.
    """
    prev = old_root.checkpoint
    rows: list[tuple[int, bytes]] = []
    digest = f"{old_root.digest:064x}"
    at = now()  # one moment for the batch: its intents become durable together
    for offset, (action, details) in enumerate(items, start=1):
        sealed = Checkpoint(
            seq=old_root.seq + offset,
            at=at,
            action=action,
            prev=prev,
            digest=digest,
            details=dict(details),
        ).seal(keys)
        rows.append((old_root.seq + offset, sealed))
        prev = chain_hash(sealed)
        genesis = genesis or prev
    root = replace(old_root, seq=rows[-1][0], checkpoint=prev, genesis=genesis)
    return rows, root, root.seal(keys)


class StagedIntents:
    """A sealed intent batch that holds the store's I/O lock until it is closed.

    Use it as a context manager and call :meth:`write` once inside; leaving the ``with``
    releases the lock, written or not. Until written, memory shows the store as it is on disk.
    """

    def __init__(
        self,
        rows: list[tuple[int, bytes]],
        root: Root,
        sealed_root: bytes,
        *,
        write: Callable[[StagedIntents], list[int]],
        release: Callable[[], None],
    ) -> None:
        self.rows = rows
        self.root = root
        self.sealed_root = sealed_root
        self._write = write
        self._release: Callable[[], None] | None = release
        self._written = False

    @property
    def seqs(self) -> list[int]:
        """The sequence numbers the intents get, in order."""
        return [seq for seq, _ in self.rows]

    def write(self) -> list[int]:
        """Commit the batch in one transaction (one fsync); returns the seqs in order.

        Raises ``DeniedError`` when it cannot be written (memory and disk are unchanged) or
        was written before, ``LockedError`` once closed.
        """
        if self._release is None:
            raise LockedError("this intent batch was closed before it was written")
        if self._written:
            raise DeniedError("delivery denied: this intent batch was already written")
        self._written = True
        try:
            return self._write(self)
        except LockedError:
            raise
        except MemoriesError as exc:
            raise denied(exc) from exc

    def close(self) -> None:
        """Release the store's I/O lock (idempotent)."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> StagedIntents:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
