"""The local IPC server: Wire v1 frames over a Unix socket, answered by a synchronous handler.

One thread accepts connections and each admitted connection gets a thread of its own, which
reads a frame, decodes, validates, dispatches and encodes it, and writes the answer, so neither
a slow handler nor a 16 MiB frame stalls other connections. Blocking sockets and a thread per
connection cost less per request than an event loop handing each request to a worker thread
and back: the daemon's throughput under many clients is bound by its CPU per request. The
server knows nothing about what requests mean; the handler callable answers them.

Who may connect: the socket lives in a runtime folder that must be 0700 and owned by this user,
is bound under a 0o177 umask and chmodded 0600 before it listens, and every connection's
``SO_PEERCRED`` uid must equal the allowed uid (this user) or it gets a ``denied`` envelope and
is closed. At most ``max_connections`` are served at once; the next gets ``busy`` and is closed.

Errors and the connection:

- framing errors close the connection after an error envelope with id ``null``: an oversized
  length (refused before reading the body), an empty frame, invalid UTF-8 or JSON, a frame cut
  short by end of file, or a frame that does not complete within ``frame_timeout`` seconds of
  its first byte. After any of these the byte stream cannot be trusted to be in step.
- envelope errors keep the connection open: valid JSON whose wrapper is wrong (not an object,
  unknown top-level field, wrong version, bad id, missing op) gets a ``protocol`` envelope,
  addressed to the request's id when that id is valid.
- a handler raising :class:`~memories.errors.MemoriesError` answers with its code and message;
  any other exception is logged by type name and code location only (its message may carry
  content) and answers ``error`` / "internal error; see the daemon log".

A connection idle between frames for ``idle_timeout`` seconds is closed without a message.

Grant authentication: a connection whose first request is ``grant_authenticate`` (see
:mod:`memories.ipc.wire`) is answered by the server's ``authenticate`` callable, not by the
handler. On success every later request of that connection reaches the handler with a
:class:`Peer` whose ``principal`` is the grant it authenticated as; on failure the error (always
``unauthorized`` or ``locked``, with a fixed message) is sent and the connection closed. A second
``grant_authenticate`` on a connection is a protocol error and closes it. An ``unauthorized``
answer on an authenticated connection (its grant was revoked or expired) closes it too. Tokens
are never logged.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import selectors
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from memories.errors import (
    BusyError,
    ConflictError,
    DeniedError,
    MemoriesError,
    ProtocolError,
    UnauthorizedError,
    UsageError,
)
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
    unix_socket_address,
)

__all__ = ["Authenticator", "Handler", "IpcServer", "Peer"]

log = logging.getLogger("memories.ipc.server")


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as the kernel reports it.

    ``principal`` is what the connection authenticated as with ``grant_authenticate`` (a grant
    id); ``None`` for a connection that relies on the operating system's word alone.
    """

    pid: int
    uid: int
    gid: int
    principal: str | None = None


Handler = Callable[[dict[str, Any], Peer], dict[str, Any]]
#: Checks a presented token; returns the principal and the response to send, or raises
#: :class:`~memories.errors.MemoriesError` (``UnauthorizedError``, ``LockedError``).
Authenticator = Callable[[str], tuple[str, dict[str, Any]]]

_INTERNAL = "internal error; see the daemon log"
_AUTH_SHAPE = "grant_authenticate carries exactly op and token (text); send it first, and once"
_AUTH_AGAIN = "this connection has sent requests already; authenticate first, and only once"
_DENIED = "this daemon serves only the user that started it; connect as that user"
_PROBE_TIMEOUT: Final = 1.0
_BACKLOG: Final = 64
_ACCEPT_RETRY: Final = 0.1
# One read takes what a request usually is at once; a large frame is read in bigger bites.
_RECV_SIZE: Final = 64 * 1024
_RECV_LIMIT: Final = 4 * 1024 * 1024
# Process-wide: os.umask is global state, so concurrent binds must not interleave.
_UMASK_LOCK = threading.Lock()
# Darwin/BSD: getsockopt(SOL_LOCAL, LOCAL_PEERCRED) fills a struct xucred; LOCAL_PEERPID the pid.
_SOL_LOCAL: Final = 0
_LOCAL_PEERCRED: Final = 1
_LOCAL_PEERPID: Final = 2
_XUCRED = struct.Struct("=IIh2x16I")


def _peer_of(sock: Any) -> Peer:
    """The credentials of the process connected to the Unix socket ``sock``.

    Raises:
        OSError: the kernel does not report peer credentials for this socket or platform.
    """
    if hasattr(socket, "SO_PEERCRED"):
        ucred = struct.Struct("3i")
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, ucred.size)
        pid, uid, gid = ucred.unpack(raw)
        return Peer(pid=pid, uid=uid, gid=gid)
    if sys.platform == "darwin":
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED.size)
        fields = _XUCRED.unpack(raw)
        uid, ngroups, groups = fields[1], fields[2], fields[3:]
        pid = struct.unpack("=i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))[0]
        return Peer(pid=pid, uid=uid, gid=groups[0] if ngroups > 0 else -1)
    raise OSError(errno.ENOTSUP, "peer credentials are not available on this platform")


class IpcServer:
    """Serve Wire v1 requests on a Unix socket, answering each with ``handler(request, peer)``.

    Each admitted connection has its own thread, which reads a frame, calls the handler and
    writes the answer, one request at a time; the handler returns the response object or
    raises :class:`~memories.errors.MemoriesError`.
    """

    def __init__(
        self,
        socket_path: Path,
        handler: Handler,
        *,
        max_connections: int = 16,
        frame_timeout: float = 10.0,
        idle_timeout: float = 300.0,
        allowed_uid: int | None = None,
        authenticate: Authenticator | None = None,
    ) -> None:
        if max_connections < 1:
            raise UsageError("max_connections must be at least 1")
        if frame_timeout <= 0 or idle_timeout <= 0:
            raise UsageError("frame_timeout and idle_timeout must be positive")
        self.socket_path = Path(socket_path)
        self._handler = handler
        self._authenticate = authenticate
        self._max_connections = max_connections
        self._frame_timeout = frame_timeout
        self._idle_timeout = idle_timeout
        self._allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self._state_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._wake: tuple[int, int] | None = None  # a pipe that interrupts the accept loop
        self._stopping = threading.Event()
        self._lock_fd: int | None = None
        self._socket_id: tuple[int, int] | None = None
        self._connections_lock = threading.Lock()
        self._connections: dict[socket.socket, _Connection] = {}
        self._admitted = 0

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the accept thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def connection_count(self) -> int:
        """Connections currently admitted (past the peer and capacity checks)."""
        return self._admitted

    def start(self) -> None:
        """Bind the socket and start serving in a background thread.

        Raises:
            UsageError: already running, or the socket path is too long.
            DeniedError: the runtime folder is not a folder owned by this user with mode 0700.
            ConflictError: something other than a socket sits at the socket path.
            BusyError: another server holds this socket path or answers on it.
            OSError: the folder or socket cannot be created.
        """
        with self._state_lock:
            if self._thread is not None:
                raise UsageError("the IPC server is already running; stop it first")
            address = unix_socket_address(self.socket_path)
            _prepare_runtime_dir(self.socket_path.parent)
            self._lock_fd = _acquire_lock(self.socket_path)
            try:
                _remove_stale_socket(self.socket_path, address)
                listener = self._bind(address)
                try:
                    listener.listen(_BACKLOG)
                    listener.setblocking(False)
                    self._wake = os.pipe()
                except OSError:
                    listener.close()
                    raise
            except (OSError, MemoriesError):
                self._remove_own_socket()
                self._release_lock()
                raise
            self._listener = listener
            self._stopping.clear()
            thread = threading.Thread(target=self._accept_loop, name="memories-ipc", daemon=True)
            self._thread = thread
            thread.start()

    def stop(self, timeout: float = 5) -> None:
        """Stop listening, disconnect open connections and remove the socket file.

        Waits up to ``timeout`` seconds for the accept thread and for connections between
        requests to end. A handler already running is not interrupted; its answer is dropped.
        Never raises for a server that is not running.
        """
        with self._state_lock:
            thread, wake = self._thread, self._wake
            if thread is None:
                return
            deadline = time.monotonic() + timeout
            self._stopping.set()
            if wake is not None:
                with contextlib.suppress(OSError):
                    os.write(wake[1], b"x")
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the IPC server thread did not stop within %.1f s", timeout)
            with self._connections_lock:
                connections = list(self._connections.values())
            for connection in connections:
                connection.hang_up()
            for connection in connections:
                if not connection.in_handler:
                    connection.thread.join(max(0.0, deadline - time.monotonic()))
            self._cleanup()

    def __enter__(self) -> IpcServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _cleanup(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        wake, self._wake = self._wake, None
        if wake is not None:
            for fd in wake:
                os.close(fd)
        self._remove_own_socket()
        self._release_lock()
        self._thread = None

    def _bind(self, address: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _UMASK_LOCK:
                previous = os.umask(0o177)
                try:
                    sock.bind(address)
                finally:
                    os.umask(previous)
            # Belt and braces: the umask already gave 0600, but the mode is the access control.
            os.chmod(address, 0o600)
            info = os.lstat(address)
            self._socket_id = (info.st_dev, info.st_ino)
        except OSError:
            sock.close()
            raise
        return sock

    def _remove_own_socket(self) -> None:
        socket_id, self._socket_id = self._socket_id, None
        if socket_id is None:
            return
        try:
            info = os.lstat(self.socket_path)
        except FileNotFoundError:
            return
        # Only remove the file this server bound, never a successor's socket.
        if (info.st_dev, info.st_ino) == socket_id:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    # -- the accept thread --------------------------------------------------------------

    def _accept_loop(self) -> None:
        listener, wake = self._listener, self._wake
        assert listener is not None and wake is not None
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(wake[0], selectors.EVENT_READ)
            while not self._stopping.is_set():
                selector.select()
                if self._stopping.is_set():
                    return
                try:
                    sock, _ = listener.accept()
                except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                    continue
                except OSError as exc:
                    # Out of descriptors or memory: wait a moment rather than spin.
                    log.warning("could not accept a connection (errno %s)", exc.errno)
                    self._stopping.wait(_ACCEPT_RETRY)
                    continue
                self._begin(sock)

    def _begin(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        thread = threading.Thread(
            target=self._on_connect, args=(sock,), name="memories-ipc-connection", daemon=True
        )
        with self._connections_lock:
            self._connections[sock] = _Connection(sock, thread)
        thread.start()

    # -- connection threads -------------------------------------------------------------

    def _on_connect(self, sock: socket.socket) -> None:
        admitted = False
        try:
            try:
                peer = _peer_of(sock)
            except OSError as exc:
                log.warning("refused a connection: peer credentials unavailable (%s)", exc.errno)
                self._send(sock, error_envelope(None, DeniedError(_DENIED)))
                return
            if peer.uid != self._allowed_uid:
                log.warning("refused a connection from uid %d (pid %d)", peer.uid, peer.pid)
                self._send(sock, error_envelope(None, DeniedError(_DENIED)))
                return
            with self._connections_lock:
                admitted = self._admitted < self._max_connections
                if admitted:
                    self._admitted += 1
            if not admitted:
                busy = BusyError(
                    f"the daemon is serving {self._max_connections} connections; try again"
                )
                self._send(sock, error_envelope(None, busy))
                return
            self._serve_connection(sock, peer)
        except OSError:
            pass  # the peer went away, stopped reading, or the server is stopping
        finally:
            with self._connections_lock:
                if admitted:
                    self._admitted -= 1
                self._connections.pop(sock, None)
            sock.close()

    def _serve_connection(self, sock: socket.socket, peer: Peer) -> None:
        reader = _FrameReader(
            sock, idle_timeout=self._idle_timeout, frame_timeout=self._frame_timeout
        )
        connection = self._connections[sock]
        fresh = True  # nothing answered yet: the one moment a connection may authenticate
        while not self._stopping.is_set():
            try:
                body = reader.next_body()
            except _IdleTimeout:
                log.debug("closed a connection idle for %.1f s", self._idle_timeout)
                return
            except _FrameTimeout:
                late = ProtocolError(
                    f"the frame did not arrive within {self._frame_timeout:g} seconds; "
                    "send each frame at once"
                )
                self._send(sock, error_envelope(None, late))
                return
            except ProtocolError as exc:
                self._send(sock, error_envelope(None, exc))
                return
            if body is None:
                return  # end of file between frames: a normal goodbye
            connection.in_handler = True
            try:
                frame, keep_open, peer = self._answer(body, peer, fresh)
            finally:
                connection.in_handler = False
            fresh = False
            if self._stopping.is_set():
                return  # the server stopped while the handler ran: the answer is dropped
            _send_frame(sock, frame, self._frame_timeout)
            if not keep_open:
                return

    def _send(self, sock: socket.socket, envelope: dict[str, Any]) -> None:
        """Best effort: the connection is being closed either way."""
        with contextlib.suppress(OSError):
            sock.settimeout(self._frame_timeout)
            sock.sendall(encode_frame(envelope))

    # -- answering ----------------------------------------------------------------------

    def _answer(self, body: bytes, peer: Peer, fresh: bool) -> tuple[bytes, bool, Peer]:
        """Decode, dispatch and encode one request.

        Returns the frame, whether to go on, and the peer for the connection's next request
        (the same one unless this request authenticated it).
        """
        try:
            value = decode_body(body)
        except ProtocolError as exc:
            return encode_frame(error_envelope(None, exc)), False, peer
        try:
            wire = parse_request(value)
        except ProtocolError as exc:
            return encode_frame(error_envelope(envelope_id(value), exc)), True, peer
        if wire.request.get("op") == AUTH_OP:
            return self._authenticate_connection(wire.id, wire.request, peer, fresh)
        envelope = self._dispatch(wire.id, wire.request, peer)
        # A grant revoked or expired under a connection ends it: no further request of it
        # can be answered, and the client re-authenticates on a new one.
        keep_open = not (peer.principal is not None and _is_unauthorized(envelope))
        try:
            return encode_frame(envelope), keep_open, peer
        except ProtocolError as exc:
            # The message is one of encode_frame's fixed texts: too large, or not JSON.
            log.warning("a response could not be framed: %s", exc.message)
            return encode_frame(error_envelope(wire.id, exc)), keep_open, peer

    def _authenticate_connection(
        self, request_id: int | str, request: dict[str, Any], peer: Peer, fresh: bool
    ) -> tuple[bytes, bool, Peer]:
        """Answer ``grant_authenticate``; the connection closes unless it succeeds."""
        if not fresh or peer.principal is not None:
            return encode_frame(error_envelope(request_id, ProtocolError(_AUTH_AGAIN))), False, peer
        token = request.get("token")
        if (
            set(request) != {"op", "token"}
            or not isinstance(token, str)
            or not 0 < len(token) <= MAX_TOKEN_CHARS
        ):
            return encode_frame(error_envelope(request_id, ProtocolError(_AUTH_SHAPE))), False, peer
        if self._authenticate is None:
            log.warning("refused a grant token: this server takes none")
            return encode_frame(error_envelope(request_id, UnauthorizedError())), False, peer
        try:
            principal, response = self._authenticate(token)
        except MemoriesError as exc:
            return encode_frame(error_envelope(request_id, exc)), False, peer
        except Exception as exc:
            _log_internal(exc)
            internal = MemoriesError(_INTERNAL)
            return encode_frame(error_envelope(request_id, internal)), False, peer
        return (
            encode_frame(ok_envelope(request_id, response)),
            True,
            replace(peer, principal=principal),
        )

    def _dispatch(
        self, request_id: int | str, request: dict[str, Any], peer: Peer
    ) -> dict[str, Any]:
        try:
            response = self._handler(request, peer)
        except MemoriesError as exc:
            return error_envelope(request_id, exc)
        except Exception as exc:
            _log_internal(exc)
            return error_envelope(request_id, MemoriesError(_INTERNAL))
        if not isinstance(response, dict):
            log.error("the handler returned %s instead of a dict", type(response).__name__)
            return error_envelope(request_id, MemoriesError(_INTERNAL))
        return ok_envelope(request_id, response)


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


class _IdleTimeout(Exception):
    """No frame began within the idle timeout."""


class _FrameTimeout(Exception):
    """A frame began but did not complete within the frame timeout."""


class _Connection:
    """One admitted socket, its thread, and whether a handler is running for it now."""

    __slots__ = ("in_handler", "sock", "thread")

    def __init__(self, sock: socket.socket, thread: threading.Thread) -> None:
        self.sock = sock
        self.thread = thread
        self.in_handler = False

    def hang_up(self) -> None:
        """End the connection from another thread: a blocked read returns end of file."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


def _send_frame(sock: socket.socket, frame: bytes, timeout: float) -> None:
    """Send ``frame`` whole within ``timeout`` seconds.

    An answer usually fits the socket's buffer, so it goes in one send that cannot block;
    only what does not fit waits, under the deadline (a client that never reads its answers
    must not hold a connection slot forever). Each socket call lets other threads run, so
    the common case makes one.

    Raises:
        OSError: the connection failed, or the rest did not go within ``timeout`` seconds.
    """
    try:
        sent = sock.send(frame, socket.MSG_DONTWAIT)
    except BlockingIOError:
        sent = 0
    if sent < len(frame):
        sock.settimeout(timeout)
        with memoryview(frame) as view:
            sock.sendall(view[sent:])


def _receive_timeout(seconds: float) -> bytes:
    """``SO_RCVTIMEO``'s struct timeval for ``seconds`` (never 0, which means no timeout)."""
    whole = int(seconds)
    micros = max(1, int((seconds - whole) * 1_000_000)) if whole == 0 else 0
    return struct.pack("@ll", whole, micros)


class _FrameReader:
    """Frame bodies from one blocking socket.

    The first byte of a frame may take up to ``idle_timeout`` to come; the rest of that frame
    must follow within ``frame_timeout`` of it. Bytes beyond a frame (pipelined requests) stay
    buffered for the next call.

    Waiting for a frame is one blocking ``recv`` that the kernel ends after ``idle_timeout``
    (``SO_RCVTIMEO``), not a Python timeout, which costs a mode switch and a ``poll`` per
    read: every socket call releases the interpreter lock, and under many connections each
    release is a hand-over to another thread. Only a frame that arrives in pieces, or an
    answer that did not fit the socket's buffer at once, uses Python timeouts; the socket
    goes back to blocking mode before the next wait.
    """

    __slots__ = ("_buffer", "_frame_timeout", "_idle_timeout", "_sock")

    def __init__(self, sock: socket.socket, *, idle_timeout: float, frame_timeout: float) -> None:
        self._sock = sock
        self._idle_timeout = idle_timeout
        self._frame_timeout = frame_timeout
        self._buffer = bytearray()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _receive_timeout(idle_timeout))

    def next_body(self) -> bytes | None:
        """The next frame's body, or None at end of file between frames.

        Raises:
            _IdleTimeout: no frame began in time.
            _FrameTimeout: a frame began and did not complete in time.
            ProtocolError: the header announces an empty or oversized body (refused before
                any of it is read), or the stream ends in the middle of a frame.
            OSError: the connection failed.
        """
        buffer = self._buffer
        if not buffer:
            chunk = self._wait_for_frame()
            if not chunk:
                return None
            buffer += chunk
        deadline = time.monotonic() + self._frame_timeout
        while len(buffer) < HEADER_SIZE:
            self._read_more(deadline, _RECV_SIZE)
        end = HEADER_SIZE + frame_length(bytes(buffer[:HEADER_SIZE]))
        while len(buffer) < end:
            self._read_more(deadline, end - len(buffer))
        with memoryview(buffer) as view:
            body = bytes(view[HEADER_SIZE:end])
        del buffer[:end]
        return body

    def _wait_for_frame(self) -> bytes:
        """The first bytes of the next frame (empty at end of file), within the idle timeout.

        Raises:
            _IdleTimeout: nothing came in time.
            OSError: the connection failed.
        """
        sock = self._sock
        if sock.gettimeout() is not None:
            sock.settimeout(None)  # blocking again, so the kernel's receive timeout applies
        began = time.monotonic()
        try:
            return sock.recv(_RECV_SIZE)
        except BlockingIOError:
            pass  # SO_RCVTIMEO ran out
        # The kernel counts in clock ticks and may end a tick early: wait out the rest.
        remaining = self._idle_timeout - (time.monotonic() - began)
        if remaining <= 0:
            raise _IdleTimeout
        sock.settimeout(remaining)
        try:
            return sock.recv(_RECV_SIZE)
        except TimeoutError as exc:
            raise _IdleTimeout from exc

    def _read_more(self, deadline: float, wanted: int) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _FrameTimeout
        self._sock.settimeout(remaining)
        try:
            chunk = self._sock.recv(min(max(wanted, _RECV_SIZE), _RECV_LIMIT))
        except TimeoutError as exc:
            raise _FrameTimeout from exc
        if not chunk:
            raise ProtocolError("the connection ended in the middle of a frame")
        self._buffer += chunk


def _prepare_runtime_dir(folder: Path) -> None:
    if not folder.exists() and not folder.is_symlink():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise DeniedError(
            f"the runtime folder {folder} is not a folder; remove it so the daemon can create it"
        )
    if info.st_uid != os.geteuid():
        raise DeniedError(
            f"the runtime folder {folder} belongs to another user; use a runtime folder you own"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise DeniedError(
            f"the runtime folder {folder} is open to other users; run `chmod 700 {folder}`"
        )


def _acquire_lock(socket_path: Path) -> int:
    # Held for the server's lifetime, so two servers starting at once cannot both decide the
    # socket is stale and replace each other's.
    lock_path = socket_path.with_name(socket_path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise BusyError(
            f"another memories daemon is already serving {socket_path}; "
            "stop it with `memories daemon stop` or use it"
        ) from exc
    except OSError:
        os.close(fd)
        raise
    return fd


def _remove_stale_socket(socket_path: Path, address: str) -> None:
    try:
        info = os.lstat(socket_path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ConflictError(
            f"{socket_path} exists and is not a socket; move it away so the daemon can listen"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(_PROBE_TIMEOUT)
    try:
        probe.connect(address)
    except ConnectionRefusedError:
        # Nobody is listening: a previous server died without cleaning up.
        log.info("removing a stale socket file at %s", socket_path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
        return
    except FileNotFoundError:
        return
    except TimeoutError as exc:
        # A listener whose backlog is full is still a listener.
        raise BusyError(
            f"another memories daemon is listening at {socket_path}; "
            "stop it with `memories daemon stop` or use it"
        ) from exc
    finally:
        probe.close()
    raise BusyError(
        f"another memories daemon is listening at {socket_path}; "
        "stop it with `memories daemon stop` or use it"
    )
