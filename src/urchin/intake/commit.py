"""Group commit: concurrent requests share one write and one fsync, and none is answered before.

Asyncio handlers queue their events for one committer thread. It takes everything
queued, applies the Recorder's rules to each request (ephemeral mode, ignored
workspaces, redaction), appends the group's lines with one write (each request's
lines contiguous), fsyncs once, and only then resolves the requests' futures, one
thread-safe call per event loop. While it waits for the disk, new requests queue
up and form the next group, so no line is acknowledged before an fsync that
started after it was written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence

from urchin.errors import JournalWriteError, RedactionError, UrchinError
from urchin.event import Event
from urchin.recorder import BatchResult, Outcome, Recorder

__all__ = ["GroupCommitter"]

log = logging.getLogger("urchin.intake")

_DROPPED = BatchResult(Outcome.DROPPED, 0, 0)


class _Waiter:
    """One request waiting for its events to be durable."""

    __slots__ = ("events", "future", "loop", "result")

    def __init__(
        self,
        events: Sequence[Event],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[BatchResult],
    ) -> None:
        self.events = events
        self.loop = loop
        self.future = future
        self.result: BatchResult | BaseException | None = None


class GroupCommitter:
    """Appends for many concurrent requests, then one fsync that covers them all.

    A single thread owns the journal's write side; it starts with the first commit.
    Thread-safe; :meth:`commit` may be awaited from any event loop.
    """

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._cond = threading.Condition()
        self._queue: list[_Waiter] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    async def commit(self, events: Sequence[Event]) -> BatchResult:
        """Record ``events`` (one contiguous write) and return once they are on stable storage.

        Raises:
            JournalWriteError: the write or the fsync failed.
            RuntimeError: the committer was closed.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[BatchResult] = loop.create_future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the intake is shutting down")
            self._queue.append(_Waiter(events, loop, future))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="urchin-intake-commit", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return await future

    def close(self) -> None:
        """Write whatever is queued, then stop the thread. Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._queue and not self._closed:
                    cond.wait()
                group, self._queue = self._queue, []
            if not group:
                return
            self._write(group)
            _deliver(group)

    def _write(self, group: list[_Waiter]) -> None:
        """Record every request of the group with one write, then fsync once.

        The Recorder's rules apply as in :meth:`Recorder.record_batch`: ephemeral mode
        is checked once for the group, just before the write, and
        :meth:`Recorder.render` applies ignored workspaces and redaction per request.
        Only the append is shared; each request's lines stay contiguous. Calling
        ``record_batch`` per request would cost a stat and a locked write each, and
        every system call here hands the GIL back to the event loop and waits to get
        it again.
        """
        recorder = self._recorder
        try:
            dropped = recorder.ephemeral.is_active()
        except OSError:
            log.exception("cannot check ephemeral mode")
            failed = JournalWriteError("the event could not be recorded")
            for waiter in group:
                waiter.result = failed
            return
        if dropped:
            for waiter in group:
                waiter.result = _DROPPED
            return
        chunks: list[bytes] = []
        writing: list[_Waiter] = []
        for waiter in group:
            try:
                result, data = recorder.render(waiter.events)
            except RedactionError as exc:
                # The caller's to fix (its message names the field, never the value): a 400.
                waiter.result = exc
                continue
            except (TypeError, ValueError, UrchinError) as exc:
                # An event that cannot be rendered fails its own request only. The error's text
                # may quote the event, so only its type is logged.
                log.error("cannot record an event: %s", type(exc).__name__)
                waiter.result = JournalWriteError("the event could not be recorded")
                continue
            waiter.result = result
            if data:
                chunks.append(data)
                writing.append(waiter)
        data = b"".join(chunks)
        if not data:
            return
        try:
            recorder.journal.append_lines(data)
            recorder.journal.sync()
        except JournalWriteError as exc:
            log.error("%s", exc.message)
            for waiter in writing:
                waiter.result = exc


def _deliver(group: list[_Waiter]) -> None:
    """Wake the waiting handlers: one thread-safe call per event loop, not per request."""
    first = group[0].loop
    if all(waiter.loop is first for waiter in group):
        by_loop = {first: group}
    else:
        by_loop = {}
        for waiter in group:
            by_loop.setdefault(waiter.loop, []).append(waiter)
    for loop, waiters in by_loop.items():
        # The loop is gone only if the server was killed mid-request; the lines are
        # durable anyway, only the acknowledgement is lost.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve, waiters)


def _resolve(waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        if waiter.future.done():  # the request was cancelled
            continue
        if isinstance(waiter.result, BaseException):
            waiter.future.set_exception(waiter.result)
        elif waiter.result is not None:
            waiter.future.set_result(waiter.result)
