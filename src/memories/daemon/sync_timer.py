"""The daemon's periodic sync: every ``sync_interval_minutes`` while unlocked, never while locked.

A background thread sends ``sync_now`` through the service like any client, as the caller
``daemon:sync`` (which does not count as activity, so it never keeps the vault from locking
when idle). Each pass does its transport I/O outside the service lock; a lock during a pass
makes its acknowledgement fail, and nothing it fetched is imported. Failures are logged by
error code only.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from memories.errors import LockedError, MemoriesError, NotFoundError
from memories.service import Service
from memories.service.access import Caller
from memories.service.handlers.sync import BACKGROUND_NAMESPACE
from memories.service.requests.sync import SyncNowRequest

__all__ = ["PeriodicSync"]

log = logging.getLogger("memories.daemon")
#: Passes per round at most (each is bounded); the next round continues.
_PASSES: Final = 50


class PeriodicSync:
    """Runs sync rounds every ``interval`` seconds in a thread of its own (0: never)."""

    def __init__(self, service: Service, interval: float) -> None:
        self._service = service
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0

    def start(self) -> None:
        if self._interval <= 0:
            return
        self._thread = threading.Thread(target=self._loop, name="memories-sync", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.run_round()

    def run_round(self) -> None:
        """One round of passes while unlocked; never raises a ``MemoriesError``."""
        caller = Caller(BACKGROUND_NAMESPACE)
        for _ in range(_PASSES):
            if self._stop.is_set() or not self._service.unlocked:
                return
            try:
                response = self._service.handle(SyncNowRequest(op="sync_now"), caller)
            except (LockedError, NotFoundError):
                return  # locked meanwhile, or nothing to sync through
            except MemoriesError as exc:
                log.warning("periodic sync failed (%s)", exc.code)
                return
            if not response.get("more"):
                break
        self.rounds += 1
