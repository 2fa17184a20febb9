"""The local IPC server: Wire v1 frames over a Unix socket, answered by a synchronous handler.

The server is an asyncio shell in a background thread. It owns only I/O: every request is
decoded, validated, dispatched and encoded in a worker thread, so neither a slow handler nor a
16 MiB frame stalls other connections. It knows nothing about what requests mean; the handler
callable answers them.

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

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import socket
import stat
import struct
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
_CLOSE_TIMEOUT: Final = 1.0
_READ_LIMIT: Final = 1024 * 1024
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

    The handler runs in a worker thread, one request at a time per connection; it returns the
    response object or raises :class:`~memories.errors.MemoriesError`.
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._lock_fd: int | None = None
        self._socket_id: tuple[int, int] | None = None
        self._startup_error: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._admitted = 0

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the server thread is alive."""
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
                sock = self._bind(address)
            except (OSError, MemoriesError):
                self._release_lock()
                raise
            self._startup_error = None
            self._executor = ThreadPoolExecutor(
                max_workers=self._max_connections, thread_name_prefix="memories-ipc-worker"
            )
            self._loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=self._run, args=(sock, ready), name="memories-ipc", daemon=True
            )
            self._thread = thread
            thread.start()
            ready.wait()
            if self._startup_error is not None:
                error = self._startup_error
                thread.join()
                self._cleanup()
                raise error

    def stop(self, timeout: float = 5) -> None:
        """Stop listening, cancel open connections and remove the socket file.

        Waits up to ``timeout`` seconds for the server thread. A handler already running in a
        worker thread is not interrupted; its answer is dropped. Never raises for a server
        that is not running.
        """
        with self._state_lock:
            thread, loop, stopping = self._thread, self._loop, self._stopping
            if thread is None:
                return
            if loop is not None and stopping is not None:
                with contextlib.suppress(RuntimeError):  # the loop has already closed
                    loop.call_soon_threadsafe(stopping.set)
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the IPC server thread did not stop within %.1f s", timeout)
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
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._remove_own_socket()
        self._release_lock()
        self._thread = None
        self._loop = None
        self._stopping = None
        self._executor = None

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

    # -- the loop thread ----------------------------------------------------------------

    def _run(self, sock: socket.socket, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(sock, ready))
        except BaseException as exc:
            if not ready.is_set():
                self._startup_error = exc
            else:
                log.error("the IPC server stopped on %s", type(exc).__name__)
        finally:
            ready.set()
            sock.close()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, sock: socket.socket, ready: threading.Event) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_unix_server(self._on_connect, sock=sock, limit=_READ_LIMIT)
        ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            # One turn of the loop lets connections accepted just now register themselves.
            await asyncio.sleep(0)
            while self._tasks:
                tasks = list(self._tasks)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                self._tasks.difference_update(tasks)
            await server.wait_closed()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        admitted = False
        try:
            try:
                peer = _peer_of(writer.get_extra_info("socket"))
            except OSError as exc:
                log.warning("refused a connection: peer credentials unavailable (%s)", exc.errno)
                await self._send_and_close(writer, error_envelope(None, DeniedError(_DENIED)))
                return
            if peer.uid != self._allowed_uid:
                log.warning("refused a connection from uid %d (pid %d)", peer.uid, peer.pid)
                await self._send_and_close(writer, error_envelope(None, DeniedError(_DENIED)))
                return
            if self._admitted >= self._max_connections:
                busy = BusyError(
                    f"the daemon is serving {self._max_connections} connections; try again"
                )
                await self._send_and_close(writer, error_envelope(None, busy))
                return
            self._admitted += 1
            admitted = True
            await self._serve_connection(reader, writer, peer)
        except (ConnectionError, TimeoutError):
            pass  # the peer went away or stopped reading; nothing is owed to it
        except asyncio.CancelledError:
            # Only stop() cancels a connection. Ending quietly keeps Python 3.11's stream
            # callback from logging the cancellation as an error.
            pass
        finally:
            if admitted:
                self._admitted -= 1
            self._tasks.discard(task)
            await _close(writer)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer
    ) -> None:
        loop = asyncio.get_running_loop()
        fresh = True  # nothing answered yet: the one moment a connection may authenticate
        while True:
            try:
                async with asyncio.timeout(self._idle_timeout):
                    first = await reader.readexactly(1)
            except asyncio.IncompleteReadError:
                return  # end of file between frames: a normal goodbye
            except TimeoutError:
                log.debug("closed a connection idle for %.1f s", self._idle_timeout)
                return
            try:
                async with asyncio.timeout(self._frame_timeout):
                    header = first + await reader.readexactly(HEADER_SIZE - 1)
                    # Refuse an oversized announcement before reading a single body byte.
                    body = await reader.readexactly(frame_length(header))
            except ProtocolError as exc:
                await self._send_and_close(writer, error_envelope(None, exc))
                return
            except asyncio.IncompleteReadError:
                cut = ProtocolError("the connection ended in the middle of a frame")
                await self._send_and_close(writer, error_envelope(None, cut))
                return
            except TimeoutError:
                late = ProtocolError(
                    f"the frame did not arrive within {self._frame_timeout:g} seconds; "
                    "send each frame at once"
                )
                await self._send_and_close(writer, error_envelope(None, late))
                return
            assert self._executor is not None
            frame, keep_open, peer = await loop.run_in_executor(
                self._executor, self._answer, body, peer, fresh
            )
            fresh = False
            writer.write(frame)
            # A client that never reads its answers must not hold a connection slot forever.
            async with asyncio.timeout(self._frame_timeout):
                await writer.drain()
            if not keep_open:
                return

    async def _send_and_close(self, writer: asyncio.StreamWriter, envelope: dict[str, Any]) -> None:
        try:
            writer.write(encode_frame(envelope))
            async with asyncio.timeout(self._frame_timeout):
                await writer.drain()
        except (ConnectionError, TimeoutError):
            pass  # best effort: the connection is being closed either way
        await _close(writer)

    # -- worker threads -----------------------------------------------------------------

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


async def _close(writer: asyncio.StreamWriter) -> None:
    if writer.is_closing():
        return
    writer.close()
    try:
        async with asyncio.timeout(_CLOSE_TIMEOUT):
            await writer.wait_closed()
    except (OSError, TimeoutError):
        writer.transport.abort()


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
