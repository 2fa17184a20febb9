"""The memories daemon: the single writer of the store, serving the service over local IPC.

It holds the store's lock for its whole life, answers framed requests on a private Unix socket
(the requests that arrive together as one batch: ``Service.begin``, one ``Service.settle``, then
``Service.complete`` for each), locks the vault after the idle period and on SIGTERM/SIGINT
locks the vault, closes the store and removes its socket and PID file.

Model and network work (answers, embeddings, sync) does not run under the service lock: the
service splits such a request into a locked prepare, unlocked work in a thread of its own and a
locked delivery that re-checks the unlock generation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from memories.config import Settings
from memories.daemon.environment import forget_secret_variables
from memories.daemon.hardening import harden_process
from memories.daemon.launcher import pid_file
from memories.daemon.startup import report_failure, report_ready
from memories.daemon.sync_timer import PeriodicSync
from memories.errors import MemoriesError
from memories.ipc.server import IpcServer, Peer
from memories.service import (
    Caller,
    Grant,
    Pending,
    Request,
    Service,
    local_cli_caller,
    parse_request,
)

__all__ = ["run_daemon"]

log = logging.getLogger("memories.daemon")

_TICK_SECONDS = 1.0


def _configure_logging(log_file: Path | None) -> logging.Handler:
    if log_file is None:
        handler: logging.Handler = logging.StreamHandler()
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.close(fd)
        handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("memories")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler


class _Callers:
    """The caller of each open connection, worked out from /proc once per connection.

    The server hands every request of a connection the same :class:`Peer` object, made when the
    kernel reported the connecting process, so it names the connection. The entry goes when
    that object does (the connection closed); a later connection, even from a process that was
    given the same pid, is worked out afresh. A process that leaves its session while connected
    keeps the namespace it connected with, for that connection only.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._by_peer: dict[int, tuple[weakref.ref[Peer], Caller]] = {}

    def __len__(self) -> int:
        with self._guard:
            return len(self._by_peer)

    def of(self, peer: Peer) -> Caller:
        slot = id(peer)
        with self._guard:
            found = self._by_peer.get(slot)
        if found is not None and found[0]() is peer:
            return found[1]
        caller = local_cli_caller(peer.pid)
        ref = weakref.ref(peer, lambda gone: self._forget(slot, gone))
        with self._guard:
            self._by_peer[slot] = (ref, caller)
        return caller

    def _forget(self, slot: int, gone: weakref.ref[Peer]) -> None:
        with self._guard:
            found = self._by_peer.get(slot)
            if found is not None and found[0] is gone:
                del self._by_peer[slot]


class _Prepared:
    """A request the service answered under its lock, or refused before that."""

    __slots__ = ("_service", "caller", "error", "pending")

    def __init__(
        self,
        service: Service,
        caller: Caller | None,
        pending: Pending | None,
        error: MemoriesError | None = None,
    ) -> None:
        self._service = service
        self.caller = caller
        self.pending = pending
        self.error = error

    @property
    def blocks(self) -> bool:
        return self.pending is not None and self.pending.blocks

    def finish(self) -> dict[str, Any]:
        if self.pending is None:
            assert self.error is not None
            raise self.error
        generation, response = self._service.complete(self.pending)
        # A lock (or a revocation) between computing and sending suppresses the late response.
        return self._service.deliver(generation, response, self.caller)


class _Dispatcher:
    """Turns the requests that arrived together into one batch of service calls.

    A connection that authenticated with a grant token is the caller ``mcp:<grant id>`` with
    that grant; the service re-reads the grant before the request and again before delivery.
    Every other connection is the local CLI caller of its process's session.
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        self.callers = _Callers()

    def prepare(self, requests: Sequence[tuple[dict[str, Any], Peer]]) -> list[_Prepared]:
        prepared: list[_Prepared] = []
        calls: list[tuple[Request, Caller]] = []
        for payload, peer in requests:
            try:
                request = parse_request(payload)
            except MemoriesError as exc:
                prepared.append(_Prepared(self.service, None, None, exc))
                continue
            caller = self._caller(peer)
            prepared.append(_Prepared(self.service, caller, None))
            calls.append((request, caller))
        answered = iter(self.service.begin(calls))
        for one in prepared:
            if one.error is None:
                one.pending = next(answered)
        return prepared

    def settle(self, prepared: Sequence[object]) -> None:
        self.service.settle([p.pending for p in prepared if isinstance(p, _Prepared) and p.pending])

    def _caller(self, peer: Peer) -> Caller:
        if peer.principal is not None:
            grant = Grant(name="", scope="read", id=peer.principal)  # the service reads it anew
            return Caller(f"mcp:{peer.principal}", grant=grant)
        return self.callers.of(peer)

    def authenticate(self, token: str) -> tuple[str, dict[str, Any]]:
        """Bind a connection to the grant ``token`` names; raises what the service raises."""
        grant = self.service.authenticate_grant(token)
        assert grant.id is not None
        return grant.id, {"grant": {"id": grant.id, "name": grant.name, "scope": grant.scope}}


def run_daemon(
    settings: Settings, *, log_file: Path | None = None, status_fd: int | None = None
) -> int:
    """Serve until SIGTERM/SIGINT. Returns the process exit code (0 on a clean stop).

    The process is hardened first (:func:`harden_process`) and secret-looking variables are
    removed from its environment. With ``status_fd`` the launcher's pipe receives one record:
    ready once the socket listens, or the code and message of the error that stopped the start
    (see :mod:`memories.daemon.startup`). A failure at start is returned as its exit code,
    never raised.
    """
    hardening = harden_process()
    forgotten = forget_secret_variables()
    handler = _configure_logging(log_file)
    log.debug(
        "hardening: not dumpable %s, no core dumps %s",
        hardening.not_dumpable,
        hardening.no_core_dumps,
    )
    if forgotten:
        log.info("removed %d secret variable(s) from the environment", len(forgotten))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    service: Service | None = None
    server: IpcServer | None = None
    syncer: PeriodicSync | None = None
    pid_path = pid_file(settings)
    try:
        try:
            service = Service(settings)
            dispatcher = _Dispatcher(service)
            server = IpcServer(
                settings.socket_path, dispatcher, authenticate=dispatcher.authenticate
            )
            server.start()
            pid_path.write_text(f"{os.getpid()}\n", encoding="ascii")
        except MemoriesError as exc:
            log.error("the daemon cannot run: %s", exc.message)
            report_failure(status_fd, exc)
            return exc.exit_code
        except Exception as exc:
            # A bug: the launcher learns only the type (the log has the traceback).
            report_failure(status_fd, MemoriesError(_internal(exc, log_file)))
            raise
        syncer = PeriodicSync(service, settings.sync_interval_minutes * 60)
        syncer.start()
        report_ready(status_fd)
        log.info("serving on %s (pid %d)", settings.socket_path, os.getpid())
        try:
            while not stop.wait(_TICK_SECONDS):
                service.tick()
        except Exception as exc:
            # Only the type: a message could quote what the vault holds.
            log.error("the daemon stops on an internal error (%s)", type(exc).__name__)
            raise
        return 0
    finally:
        if syncer is not None:
            syncer.stop()
        if server is not None:
            server.stop()
        if service is not None:
            service.close()
        with contextlib.suppress(FileNotFoundError):
            if pid_path.read_text(encoding="ascii").strip() == str(os.getpid()):
                pid_path.unlink()
        for sig, old in previous.items():
            signal.signal(sig, old)
        log.info("stopped")
        logging.getLogger("memories").removeHandler(handler)
        handler.close()


def _internal(exc: BaseException, log_file: Path | None) -> str:
    where = f"see {log_file}" if log_file is not None else "see its log"
    return f"the memories daemon failed at start (internal error {type(exc).__name__}); {where}"
