"""The service: the one place that authorizes and dispatches requests.

Front ends (IPC, and later HTTP/WebSocket, relay and MCP) hand a parsed
:data:`~memories.service.requests.Request` and a :class:`~memories.service.access.Caller` to
:meth:`Service.handle`. Everything runs under one service lock: the store is not thread-safe and
each request sees one consistent state.

Each request declares what it needs (:class:`~memories.service.requests.Needs`) and
:func:`~memories.service.access.authorize` is the only reader of those declarations; the
handlers (one module per area under ``handlers/``) then act on an authorized request:

- lock state: requests that need the store unlocked fail with ``LockedError``;
- elevation: reading or editing private assets, writing credentials and changing the password
  need the caller's namespace elevated with ``sudo`` (``DeniedError``); remote namespaces never
  inherit a local elevation;
- audit: content reads (read, file_get, history, diff) commit a read intent before the plaintext
  is returned, and are denied when it cannot be written; failed writes are recorded as
  ``<op>.failed`` without content;
- idle lock: :meth:`Service.tick` locks after ``idle_lock_seconds`` without requests
  (``status`` and ``desktop_status`` do not count as activity);
- stale delivery: locking advances :attr:`Service.generation`; :meth:`Service.deliver` refuses a
  response computed under an earlier generation.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, assert_never

from memories.config import Settings
from memories.errors import LockedError, MemoriesError, UnauthorizedError
from memories.service.access import LOCKED_MESSAGE, Access, Caller, Elevation, authorize
from memories.service.audit import record_failure
from memories.service.core import Core
from memories.service.deferred import Deferred
from memories.service.grants import Grant
from memories.service.handlers import (
    assets,
    audit,
    backup,
    cards,
    devices,
    files,
    grants,
    imports,
    search,
    session,
    sync,
    vaults,
)
from memories.service.handlers.secrets import handle as handle_secret
from memories.service.intents import Ticket
from memories.service.requests import (
    AssetRequest,
    AuditRequest,
    BackupRequest,
    CardRequest,
    DesktopStatusRequest,
    FileRequest,
    GrantRequest,
    ImportRequest,
    Request,
    SearchRequest,
    SessionRequest,
    StatusRequest,
    VaultRequest,
    op_name,
)
from memories.service.requests.devices import DeviceRequest
from memories.service.requests.secrets import SecretRequest
from memories.service.requests.sync import SyncRequest
from memories.store import KdfCost, Store

__all__ = ["LOCKED_MESSAGE", "Pending", "Service"]

log = logging.getLogger(__name__)

# What answering a request under the lock leaves: generation, response, read intents filed,
# and the work to run without the lock.
Answer = tuple[int, dict[str, Any], list[Ticket], Deferred[Any] | None]


@dataclass(eq=False)
class Pending:
    """A request :meth:`Service.begin` answered under the lock: its answer or its error."""

    request: Request
    caller: Caller
    answer: Answer | None = None
    error: Exception | None = None

    @property
    def blocks(self) -> bool:
        """Whether :meth:`Service.complete` runs slow work (models, network) for it."""
        return self.answer is not None and self.answer[3] is not None


class Service:
    """The request dispatcher over one store file.

    The store is opened (taking its single-writer lock) when it exists; otherwise the service
    waits for ``init``. Raises ``BusyError`` when another process holds the store, and what
    ``Store.open`` raises for an unreadable file.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        kdf_cost: KdfCost | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.RLock()
        self._core = Core(settings, kdf_cost=kdf_cost, clock=clock, wall_clock=wall_clock)
        self._last_active = clock()

    # -- state --------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Advances every time the store locks; responses carry the one they were made under."""
        return self._core.generation

    @property
    def initialized(self) -> bool:
        return self._core.store is not None

    @property
    def unlocked(self) -> bool:
        return self._core.state == "unlocked"

    @property
    def elevation(self) -> Elevation:
        return self._core.elevation

    @property
    def store(self) -> Store | None:
        """The open store (for in-process tools and tests); None before ``init``."""
        return self._core.store

    # -- entry points -------------------------------------------------------------------------

    def handle(self, request: Request, caller: Caller) -> dict[str, Any]:
        """Answer ``request`` for ``caller``; see :meth:`handle_stamped`."""
        return self.handle_stamped(request, caller)[1]

    def handle_stamped(self, request: Request, caller: Caller) -> tuple[int, dict[str, Any]]:
        """Answer ``request``; returns the generation it was answered under and the response.

        A front end passes both to :meth:`deliver` right before sending, so a response made
        before a lock (idle or explicit) is not delivered after it.

        Everything happens under the service lock (:meth:`begin` answers many requests at
        once). Work that may block (models, network, child processes) belongs outside it:
        such an op would be split into a prepare step here
        (authorize, decrypt what it needs, record its intent), the slow part in the caller's
        thread with no lock held, and a finish step under the lock again, which calls
        :meth:`deliver` with the generation of the prepare step before anything is returned.

        Raises:
            LockedError: the store is locked and the op needs it unlocked.
            DeniedError: elevation, role or grant is missing, a password is wrong, or an audit
                record could not be written before delivery.
            UnauthorizedError: the caller's stored grant is gone, revoked or expired.
            NotFoundError, UsageError, ConflictError, IntegrityError, MemoriesError: as the
                store and the vault domain raise them; messages carry no secrets or content.
        """
        pending = self.begin([(request, caller)])
        self.settle(pending)
        return self.complete(pending[0])

    def begin(self, calls: Sequence[tuple[Request, Caller]]) -> list[Pending]:
        """Answer ``calls`` under one hold of the service lock, as far as the lock goes.

        A front end serving many connections answers the requests that arrived together this
        way, then calls :meth:`settle` once for all of them and :meth:`complete` for each:
        one commit makes every read intent of the batch durable. Never raises: a request's
        error is raised by :meth:`complete`.
        """
        answered: list[Pending] = []
        with self._lock:
            for request, caller in calls:
                try:
                    answered.append(Pending(request, caller, answer=self._answer(request, caller)))
                except Exception as exc:  # raised by ``complete``, in the caller's thread
                    answered.append(Pending(request, caller, error=exc))
        return answered

    def settle(self, pending: Sequence[Pending]) -> None:
        """Make the read intents of ``pending`` durable with one commit, or settle them with
        the error that withholds their answers. Never raises."""
        tickets = [t for one in pending if one.answer is not None for t in one.answer[2]]
        if tickets:
            core = self._core
            core.intents.settle(tickets, lock=self._lock, commit=core.commit_intents)

    def complete(self, pending: Pending) -> tuple[int, dict[str, Any]]:
        """The generation and response of a request :meth:`begin` answered and :meth:`settle`
        settled; runs the work it left for outside the lock (:attr:`Pending.blocks`).

        Raises what :meth:`handle_stamped` raises.
        """
        if pending.error is not None:
            raise pending.error
        assert pending.answer is not None
        generation, response, tickets, deferred = pending.answer
        if tickets:  # settled already after ``settle``; a ticket that is not, is waited for
            core = self._core
            core.intents.wait(tickets, lock=self._lock, commit=core.commit_intents)
        if deferred is not None:
            response = self._run_deferred(pending.request, pending.caller, generation, deferred)
        return generation, response

    def _answer(self, request: Request, caller: Caller) -> Answer:
        """Authorize and dispatch ``request``; called with the service lock held.

        Returns the generation, the response, the read intents it filed (the response may
        not leave before they are durable) and the work it leaves for outside the lock.
        """
        core = self._core
        if caller.grant is not None:
            # The stored record decides, as it stands now: revocation and expiry are
            # immediate, and a grant is only readable while the store is unlocked.
            caller = replace(caller, grant=core.current_grant(caller.grant))
        core.request_tickets = []
        core.deferred = None
        # Polling the state (a status bar, a tray) must not keep the vault open forever.
        # So must the daemon's own periodic sync.
        if not isinstance(request, DesktopStatusRequest | StatusRequest) and (
            caller.namespace != sync.BACKGROUND_NAMESPACE
        ):
            self._last_active = self._clock()
        try:
            access = authorize(
                request,
                caller,
                state=core.state,
                elevated=core.elevation.active(caller.namespace),
                directory=core,
            )
            response = self._dispatch(request, access)
        except MemoriesError as exc:  # a bug is logged where it surfaces, by type only
            if type(request).NEEDS.audit_failures:
                record_failure(core.store, op_name(type(request)), exc, caller)
            raise
        finally:
            tickets, core.request_tickets = core.request_tickets, []
            deferred, core.deferred = core.deferred, None
        return core.generation, response, tickets, deferred

    def _run_deferred(
        self, request: Request, caller: Caller, generation: int, deferred: Deferred[Any]
    ) -> dict[str, Any]:
        """Run ``deferred``'s work without the lock, then re-check and finish under it; a
        finish may leave further work (its intents are durable before that work starts).

        Raises ``LockedError`` when the store locked meanwhile, what :func:`authorize` raises
        when access changed, and what the work or its finish raise.
        """
        core = self._core
        while True:
            try:
                result = deferred.work()
            except MemoriesError as exc:
                with self._lock:
                    if core.generation == generation:
                        deferred.failed(exc)
                raise
            with self._lock:
                if core.generation != generation:
                    raise LockedError(LOCKED_MESSAGE)
                if caller.grant is not None:  # revoked or expired while the work ran?
                    caller = replace(caller, grant=core.current_grant(caller.grant))
                core.request_tickets = []
                core.deferred = None
                access = authorize(  # access may have changed while the work ran
                    request,
                    caller,
                    state=core.state,
                    elevated=core.elevation.active(caller.namespace),
                    directory=core,
                )
                try:
                    response = deferred.finish(result, access)
                except MemoriesError as exc:
                    deferred.failed(exc)
                    raise
                tickets, core.request_tickets = core.request_tickets, []
                following, core.deferred = core.deferred, None
            if tickets:
                core.intents.wait(tickets, lock=self._lock, commit=core.commit_intents)
            if following is None:
                return response
            deferred = following

    def deliver(
        self, generation: int, response: dict[str, Any], caller: Caller | None = None
    ) -> dict[str, Any]:
        """Return ``response`` if no lock happened since ``generation`` and, for a ``caller``
        with a stored grant, if that grant is still live.

        Raises:
            LockedError: the store locked after the response was computed; it is dropped.
            UnauthorizedError: the caller's grant was revoked or expired meanwhile; dropped.
        """
        grant = None if caller is None else caller.grant
        if grant is None or grant.id is None:
            if generation != self._core.generation:
                raise LockedError(LOCKED_MESSAGE)
            return response
        with self._lock:  # a revocation or lock in progress finishes first
            if generation != self._core.generation:
                raise LockedError(LOCKED_MESSAGE)
            self._core.current_grant(grant)
        return response

    def authenticate_grant(self, token: str) -> Grant:
        """The live grant ``token`` was minted for; what an MCP connection is bound to.

        Does not count as activity for the idle lock.

        Raises:
            LockedError: the store is locked; grants can be checked only while it is unlocked.
            UnauthorizedError: no store, or the token is wrong, revoked or expired. The error
                never says which.
        """
        core = self._core
        with self._lock:
            store = core.store
            if store is None:
                raise UnauthorizedError()
            if not store.unlocked:
                raise LockedError(LOCKED_MESSAGE)
            record = core.grants().authenticate(token, core.now())
            if record is None:
                log.warning("refused a grant token")
                raise UnauthorizedError()
            log.info("a client authenticated with grant %s", record.id[:8])
            return record.grant()

    def tick(self) -> bool:
        """Lock when idle for longer than ``idle_lock_seconds``; returns whether it locked.

        The daemon calls this about once a second. Expired elevations are forgotten too.
        """
        with self._lock:
            self._core.elevation.prune()
            if not self.unlocked:
                return False
            if self._clock() - self._last_active <= self.settings.idle_lock_seconds:
                return False
            self._core.lock_now()
            log.info("locked after %.0f seconds without requests", self.settings.idle_lock_seconds)
            return True

    def close(self) -> None:
        """Lock, close the store and release its single-writer lock (idempotent)."""
        with self._lock:
            core = self._core
            core.lock_now()
            store, core.store = core.store, None
            if store is not None:
                store.close()

    # -- dispatch -----------------------------------------------------------------------------

    def _dispatch(self, request: Request, access: Access) -> dict[str, Any]:
        core = self._core
        if isinstance(request, SessionRequest):
            return session.handle(core, request, access)
        if isinstance(request, VaultRequest):
            return vaults.handle(core, request, access)
        if isinstance(request, AssetRequest):
            return assets.handle(core, request, access)
        if isinstance(request, CardRequest):
            return cards.handle(core, request, access)
        if isinstance(request, FileRequest):
            return files.handle(core, request, access)
        if isinstance(request, AuditRequest):
            return audit.handle(core, request, access)
        if isinstance(request, BackupRequest):
            return backup.handle(core, request, access)
        if isinstance(request, SecretRequest):
            return handle_secret(core, request, access)
        if isinstance(request, SearchRequest):
            return search.handle(core, request, access)
        if isinstance(request, ImportRequest):
            return imports.handle(core, request, access)
        if isinstance(request, GrantRequest):
            return grants.handle(core, request, access)
        if isinstance(request, DeviceRequest):
            return devices.handle(core, request, access)
        if isinstance(request, SyncRequest):
            return sync.handle(core, request, access)
        assert_never(request)
