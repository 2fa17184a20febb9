"""The IPC server's event loop: every connection read, answered and written from one thread.

Why one thread: the daemon's throughput under many clients is bound by its CPU per request,
and in Python most of that CPU goes to handing the interpreter lock between threads when each
connection has its own. Here one ``select`` wakes the loop for every connection that has sent
something; the loop reads each, takes one whole frame from each connection that is not busy,
and answers them together through the :class:`~memories.ipc.handling.BatchHandler`: one
``prepare``, then a look for requests that arrived meanwhile (prepared into the same batch, a
few rounds at most), one ``settle`` (the daemon's one commit for the batch's read intents),
and each answer written straight away. A request whose answer blocks (models, network, a plain
handler function) finishes in a thread of its own and hands its frame back to the loop, so it
holds up nobody.

Per connection: one request at a time, in the order sent (pipelined frames wait their turn);
the first byte of a frame starts its ``frame_timeout``; a connection idle between frames for
``idle_timeout`` is closed without a message; an answer that the peer does not read within
``frame_timeout`` closes the connection. The rules for errors and for grant authentication are
in :mod:`memories.ipc.server`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import selectors
import socket
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from memories.errors import BusyError, DeniedError, MemoriesError, ProtocolError, UnauthorizedError
from memories.ipc.handling import BatchHandler, Prepared
from memories.ipc.peer import Peer, peer_of
from memories.ipc.wire import (
    AUTH_OP,
    HEADER_SIZE,
    MAX_TOKEN_CHARS,
    decode_body,
    encode_frame,
    envelope_id,
    error_envelope,
    frame_length,
    ok_envelope,
    parse_request,
)

__all__ = ["Authenticator", "ServeLoop"]

log = logging.getLogger("memories.ipc.server")

#: Checks a presented token; returns the principal and the response to send, or raises
#: :class:`~memories.errors.MemoriesError` (``UnauthorizedError``, ``LockedError``).
Authenticator = Callable[[str], tuple[str, dict[str, Any]]]

_INTERNAL = "internal error; see the daemon log"
_AUTH_SHAPE = "grant_authenticate carries exactly op and token (text); send it first, and once"
_AUTH_AGAIN = "this connection has sent requests already; authenticate first, and only once"
_DENIED = "this daemon serves only the user that started it; connect as that user"
_CUT_SHORT = "the connection ended in the middle of a frame"
# One read takes what a request usually is at once; a large frame is read in bigger bites.
_RECV_SIZE: Final = 64 * 1024
_RECV_LIMIT: Final = 4 * 1024 * 1024
_ACCEPT_RETRY: Final = 0.1
# How many times a batch looks again for requests that arrived while it was prepared.
_GATHER_ROUNDS: Final = 8


class _Connection:
    """One admitted socket and where its conversation stands."""

    __slots__ = (
        "busy",
        "closed",
        "closing",
        "ended",
        "events",
        "frame_began",
        "fresh",
        "idle_since",
        "inbox",
        "out",
        "peer",
        "send_began",
        "sent",
        "sock",
    )

    def __init__(self, sock: socket.socket, peer: Peer, now: float) -> None:
        self.sock = sock
        self.peer = peer
        self.inbox = bytearray()
        self.out = b""  # the answer being written, from ``sent`` on
        self.sent = 0
        self.busy = False  # a request of it is being answered
        self.fresh = True  # nothing answered yet: the one moment it may authenticate
        self.closing = False  # close once ``out`` is written
        self.ended = False  # the peer sent end of file
        self.closed = False
        self.events = 0  # what the selector watches for it
        self.idle_since = now
        self.frame_began: float | None = None
        self.send_began: float | None = None


class _Request:
    """A request of a batch: where it came from, and once prepared, its preparation."""

    __slots__ = ("connection", "id", "payload", "prepared")

    def __init__(self, connection: _Connection, request_id: int | str, payload: dict[str, Any]):
        self.connection = connection
        self.id = request_id
        self.payload = payload
        self.prepared: Prepared | None = None


class ServeLoop:
    """Serves ``listener`` until ``stopping`` is set; see the module docstring.

    Its own pipe interrupts the wait: :meth:`interrupt` after setting ``stopping``, and the
    threads that finish blocking requests, to hand back their answers. The pipe is closed when
    :meth:`run` ends, under a lock, so a late thread never writes to a reused descriptor.

    Raises ``OSError`` when the pipe cannot be made.
    """

    def __init__(
        self,
        listener: socket.socket,
        handler: BatchHandler,
        *,
        authenticate: Authenticator | None,
        allowed_uid: int,
        max_connections: int,
        idle_timeout: float,
        frame_timeout: float,
        stopping: threading.Event,
    ) -> None:
        self._listener = listener
        self._wake = os.pipe()
        os.set_blocking(self._wake[1], False)
        self._wake_guard = threading.Lock()  # held to write to the pipe and to close it
        self._wake_open = True
        self._handler = handler
        self._authenticate = authenticate
        self._allowed_uid = allowed_uid
        self._max_connections = max_connections
        self._idle_timeout = idle_timeout
        self._frame_timeout = frame_timeout
        self._stopping = stopping
        self._selector = selectors.DefaultSelector()
        self._connections: dict[int, _Connection] = {}
        self._finished: collections.deque[tuple[_Connection, bytes, bool]] = collections.deque()
        self._waiting: set[_Connection] = set()  # not busy, with a whole frame in the inbox
        self._next_check = float("inf")  # no deadline falls before this

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def interrupt(self) -> None:
        """End the loop's current wait (a full pipe ends it all the same)."""
        with self._wake_guard:
            if self._wake_open:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._wake[1], b"x")

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> None:
        selector = self._selector
        selector.register(self._listener, selectors.EVENT_READ)
        selector.register(self._wake[0], selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                batch = self._gather(self._timeout())
                if self._stopping.is_set():
                    return
                if batch:
                    self._answer(batch)
                now = time.monotonic()
                if now >= self._next_check:
                    self._expire(now)
        finally:
            for connection in list(self._connections.values()):
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)
                self._close(connection)
            selector.close()
            with self._wake_guard:
                self._wake_open = False
                for fd in self._wake:
                    os.close(fd)

    def _timeout(self) -> float | None:
        if self._waiting or self._finished:
            return 0
        if self._next_check == float("inf"):
            return None
        return max(0.0, self._next_check - time.monotonic())

    def _gather(self, timeout: float | None) -> list[_Request]:
        """Wait up to ``timeout`` for activity, act on it, and return the requests to answer."""
        accept = False
        for key, mask in self._selector.select(timeout):
            connection = key.data
            if connection is None:
                if key.fileobj is self._listener:
                    accept = True
                else:
                    self._drain_wake()
                continue
            if mask & selectors.EVENT_WRITE:
                self._write(connection)
            if mask & selectors.EVENT_READ and not connection.closed:
                self._read(connection)
        if accept:  # after the hang-ups above, which free their places
            self._accept()
        while self._finished:
            connection, frame, keep_open = self._finished.popleft()
            if not connection.closed:
                connection.busy = False
                self._send(connection, frame, keep_open)
        batch: list[_Request] = []
        waiting, self._waiting = self._waiting, set()
        for connection in waiting:
            if not connection.closed and not connection.busy:
                request = self._take(connection)
                if request is not None:
                    batch.append(request)
        return batch

    # -- answering ------------------------------------------------------------------------

    def _answer(self, batch: list[_Request]) -> None:
        """Prepare ``batch`` and what arrives meanwhile, settle it once, answer each."""
        handler = self._handler
        answered: list[_Request] = []
        for round_ in range(1, _GATHER_ROUNDS + 1):
            self._prepare(batch)
            answered += batch
            if round_ == _GATHER_ROUNDS:
                break
            batch = self._gather(0)
            if not batch:
                break
        try:
            handler.settle([request.prepared for request in answered if request.prepared])
        except Exception as exc:  # a bug: nothing of this batch may be delivered
            _log_internal(exc)
            for request in answered:
                request.prepared = None
        for request in answered:
            prepared = request.prepared
            if prepared is not None and prepared.blocks:
                self._finish_in_thread(request, prepared)
            else:
                frame, keep_open = self._envelope(request, prepared)
                request.connection.busy = False
                self._send(request.connection, frame, keep_open)

    def _prepare(self, batch: Sequence[_Request]) -> None:
        if not batch:
            return
        requests = [(request.payload, request.connection.peer) for request in batch]
        try:
            answers = self._handler.prepare(requests)
            if len(answers) != len(batch):
                raise ValueError(f"{len(answers)} preparations for {len(batch)} requests")
        except Exception as exc:  # a bug: this batch answers "internal error", the loop goes on
            _log_internal(exc)
            return  # unprepared requests are answered as internal errors
        for request, prepared in zip(batch, answers, strict=True):
            request.prepared = prepared

    def _envelope(self, request: _Request, prepared: Prepared | None) -> tuple[bytes, bool]:
        """The answer's frame, and whether the connection stays open after it.

        ``prepared`` is None when preparing or settling its batch failed (logged there).
        """
        envelope = error_envelope(request.id, MemoriesError(_INTERNAL))
        if prepared is not None:
            try:
                response = prepared.finish()
                if isinstance(response, dict):
                    envelope = ok_envelope(request.id, response)
                else:
                    kind = type(response).__name__
                    log.error("the handler returned %s instead of a dict", kind)
            except MemoriesError as exc:
                envelope = error_envelope(request.id, exc)
            except Exception as exc:  # a bug: logged by type and place, answered as internal
                _log_internal(exc)
        # A grant revoked or expired under a connection ends it: no further request of it can
        # be answered, and the client re-authenticates on a new one.
        peer = request.connection.peer
        keep_open = not (peer.principal is not None and _is_unauthorized(envelope))
        try:
            return encode_frame(envelope), keep_open
        except ProtocolError as exc:
            # The message is one of encode_frame's fixed texts: too large, or not JSON.
            log.warning("a response could not be framed: %s", exc.message)
            return encode_frame(error_envelope(request.id, exc)), keep_open

    def _finish_in_thread(self, request: _Request, prepared: Prepared) -> None:
        connection = request.connection
        self._watch(connection)  # busy: no reading until the answer is back

        def finish() -> None:
            frame, keep_open = self._envelope(request, prepared)
            self._finished.append((connection, frame, keep_open))
            self.interrupt()

        threading.Thread(target=finish, name="memories-ipc-request", daemon=True).start()

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            os.read(self._wake[0], 4096)

    # -- frames in --------------------------------------------------------------------------

    def _take(self, connection: _Connection) -> _Request | None:
        """The connection's next request for the handler, if a whole frame is in.

        Frames the server answers itself (authentication, envelope errors) are answered here;
        a framing error is answered and closes the connection.
        """
        inbox = connection.inbox
        try:
            end = _frame_end(inbox)
        except ProtocolError as exc:
            self._fail(connection, None, exc)
            return None
        if end is None or len(inbox) < end:
            return None
        body = bytes(inbox[HEADER_SIZE:end])
        del inbox[:end]
        connection.frame_began = None
        connection.busy = True
        try:
            value = decode_body(body)
        except ProtocolError as exc:
            self._fail(connection, None, exc)
            return None
        try:
            wire = parse_request(value)
        except ProtocolError as exc:
            self._fail(connection, envelope_id(value), exc, keep_open=True)
            return None
        if wire.request.get("op") == AUTH_OP:
            self._authenticate_connection(connection, wire.id, wire.request)
            return None
        return _Request(connection, wire.id, wire.request)

    def _answer_now(
        self, connection: _Connection, envelope: dict[str, Any], keep_open: bool
    ) -> None:
        connection.busy = False
        self._send(connection, encode_frame(envelope), keep_open)

    def _fail(
        self,
        connection: _Connection,
        request_id: int | str | None,
        error: MemoriesError,
        *,
        keep_open: bool = False,
    ) -> None:
        """Answer with ``error``; the connection closes unless ``keep_open``."""
        self._answer_now(connection, error_envelope(request_id, error), keep_open)

    def _authenticate_connection(
        self, connection: _Connection, request_id: int | str, request: dict[str, Any]
    ) -> None:
        """Answer ``grant_authenticate``; the connection closes unless it succeeds."""
        peer = connection.peer
        if not connection.fresh or peer.principal is not None:
            self._fail(connection, request_id, ProtocolError(_AUTH_AGAIN))
            return
        token = request.get("token")
        if (
            set(request) != {"op", "token"}
            or not isinstance(token, str)
            or not 0 < len(token) <= MAX_TOKEN_CHARS
        ):
            self._fail(connection, request_id, ProtocolError(_AUTH_SHAPE))
            return
        if self._authenticate is None:
            log.warning("refused a grant token: this server takes none")
            self._fail(connection, request_id, UnauthorizedError())
            return
        try:
            principal, response = self._authenticate(token)
        except MemoriesError as exc:
            self._fail(connection, request_id, exc)
            return
        except Exception as exc:  # a bug: logged by type and place, answered as internal
            _log_internal(exc)
            self._fail(connection, request_id, MemoriesError(_INTERNAL))
            return
        connection.peer = replace(peer, principal=principal)
        self._answer_now(connection, ok_envelope(request_id, response), True)

    def _read(self, connection: _Connection) -> None:
        inbox = connection.inbox
        wanted = _RECV_SIZE
        with contextlib.suppress(ProtocolError):  # reported when the frame is taken
            end = _frame_end(inbox)
            if end is not None:
                wanted = min(max(end - len(inbox), _RECV_SIZE), _RECV_LIMIT)
        try:
            chunk = connection.sock.recv(wanted)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)
            return
        if not chunk:
            connection.ended = True
            if connection.busy:
                self._watch(connection)  # its answer goes out, then it closes
            elif not inbox:
                self._close(connection)  # end of file between frames: a normal goodbye
            elif _whole_frame(inbox):
                self._waiting.add(connection)  # answer what came, then close
            else:
                self._fail(connection, None, ProtocolError(_CUT_SHORT))
            return
        if not inbox:
            self._started_frame(connection, time.monotonic())
        inbox += chunk
        if not connection.busy and _whole_frame(inbox):
            self._waiting.add(connection)

    def _started_frame(self, connection: _Connection, now: float) -> None:
        connection.frame_began = now
        self._next_check = min(self._next_check, now + self._frame_timeout)

    # -- frames out -------------------------------------------------------------------------

    def _send(self, connection: _Connection, frame: bytes, keep_open: bool) -> None:
        """Write ``frame``: what the socket takes now goes at once, the rest when it can."""
        now = time.monotonic()
        connection.fresh = False
        connection.idle_since = now
        if not keep_open or (connection.ended and not _whole_frame(connection.inbox)):
            connection.closing = True
        connection.out, connection.sent = frame, 0
        self._write(connection)
        if connection.closed:
            return
        if connection.out:
            connection.send_began = now
            self._next_check = min(self._next_check, now + self._frame_timeout)
        else:
            self._next_check = min(self._next_check, now + self._idle_timeout)
            if connection.inbox:
                self._started_frame(connection, now)
                if _whole_frame(connection.inbox):
                    self._waiting.add(connection)
        self._watch(connection)

    def _write(self, connection: _Connection) -> None:
        out = connection.out
        if out:
            try:
                with memoryview(out) as view:
                    connection.sent += connection.sock.send(view[connection.sent :])
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._close(connection)  # the peer went away or stopped reading
                return
            if connection.sent < len(out):
                return
            connection.out, connection.sent, connection.send_began = b"", 0, None
            if not connection.closing:
                self._watch(connection)
        if connection.closing:
            self._close(connection)

    def _watch(self, connection: _Connection) -> None:
        """Watch for what the connection waits for: its answer going out, or its next frame."""
        events = 0
        if connection.out:
            events |= selectors.EVENT_WRITE
        elif not connection.busy and not connection.ended and not _whole_frame(connection.inbox):
            events |= selectors.EVENT_READ
        if events == connection.events or connection.closed:
            return
        if connection.events == 0:
            self._selector.register(connection.sock, events, connection)
        elif events == 0:
            self._selector.unregister(connection.sock)
        else:
            self._selector.modify(connection.sock, events, connection)
        connection.events = events

    # -- connections ------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                # Out of descriptors or memory: wait a moment rather than spin.
                log.warning("could not accept a connection (errno %s)", exc.errno)
                self._stopping.wait(_ACCEPT_RETRY)
                return
            self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        try:
            peer = peer_of(sock)
        except OSError as exc:
            log.warning("refused a connection: peer credentials unavailable (%s)", exc.errno)
            _refuse(sock, DeniedError(_DENIED))
            return
        if peer.uid != self._allowed_uid:
            log.warning("refused a connection from uid %d (pid %d)", peer.uid, peer.pid)
            _refuse(sock, DeniedError(_DENIED))
            return
        if len(self._connections) >= self._max_connections:
            _refuse(
                sock,
                BusyError(f"the daemon is serving {self._max_connections} connections; try again"),
            )
            return
        sock.setblocking(False)
        now = time.monotonic()
        connection = _Connection(sock, peer, now)
        self._connections[sock.fileno()] = connection
        self._next_check = min(self._next_check, now + self._idle_timeout)
        self._watch(connection)

    def _close(self, connection: _Connection) -> None:
        if connection.closed:
            return
        connection.closed = True
        if connection.events:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(connection.sock)
            connection.events = 0
        self._connections.pop(connection.sock.fileno(), None)
        connection.sock.close()

    def _expire(self, now: float) -> None:
        """Close connections past a deadline; note when the next one falls."""
        upcoming = float("inf")
        for connection in list(self._connections.values()):
            if connection.send_began is not None:
                deadline = connection.send_began + self._frame_timeout
                if now >= deadline:
                    self._close(connection)  # it does not read its answers
                    continue
            elif connection.busy:
                continue
            elif connection.frame_began is not None:
                deadline = connection.frame_began + self._frame_timeout
                if now >= deadline:
                    late = ProtocolError(
                        f"the frame did not arrive within {self._frame_timeout:g} seconds; "
                        "send each frame at once"
                    )
                    self._fail(connection, None, late)
                    continue
            else:
                deadline = connection.idle_since + self._idle_timeout
                if now >= deadline:
                    log.debug("closed a connection idle for %.1f s", self._idle_timeout)
                    self._close(connection)
                    continue
            upcoming = min(upcoming, deadline)
        self._next_check = upcoming


def _frame_end(inbox: bytearray) -> int | None:
    """Where the frame at the start of ``inbox`` ends; None before its header is in.

    Raises:
        ProtocolError: the header announces an empty or oversized frame.
    """
    if len(inbox) < HEADER_SIZE:
        return None
    return HEADER_SIZE + frame_length(bytes(inbox[:HEADER_SIZE]))


def _whole_frame(inbox: bytearray) -> bool:
    """Whether ``inbox`` holds a whole frame, or a header that must be refused at once."""
    try:
        end = _frame_end(inbox)
    except ProtocolError:
        return True
    return end is not None and len(inbox) >= end


def _refuse(sock: socket.socket, error: MemoriesError) -> None:
    """Best effort: tell a connection it is not served, and close it."""
    with contextlib.suppress(OSError):
        sock.send(encode_frame(error_envelope(None, error)), socket.MSG_DONTWAIT)
    sock.close()


def _is_unauthorized(envelope: dict[str, Any]) -> bool:
    error = envelope.get("error")
    return isinstance(error, dict) and error.get("code") == UnauthorizedError.code


def _log_internal(exc: Exception) -> None:
    # The type and the code location are enough to find the bug; the message may hold content.
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" at {Path(last.filename).name}:{last.lineno} in {last.name}"
    log.error("the request handler failed with %s%s", type(exc).__name__, where)
