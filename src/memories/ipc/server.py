"""The local IPC server: Wire v1 frames over a Unix socket, answered by a handler.

One thread serves every connection (see :mod:`memories.ipc.loop`): it reads the frames that
arrived, answers the requests among them together through a
:class:`~memories.ipc.handling.BatchHandler` (the daemon's commits one intent batch for all of
them), and writes the answers. A request whose answer blocks finishes in a thread of its own,
so neither a slow request nor a 16 MiB frame stalls other connections. A plain function
handler ``handler(request, peer)`` answers each request in a thread of its own. The server
knows nothing about what requests mean.

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
import fcntl
import logging
import os
import socket
import stat
import threading
from pathlib import Path
from types import TracebackType
from typing import Final

from memories.errors import BusyError, ConflictError, DeniedError, MemoriesError, UsageError
from memories.ipc.handling import BatchHandler, Handler, per_request
from memories.ipc.loop import Authenticator, ServeLoop
from memories.ipc.peer import Peer
from memories.ipc.wire import unix_socket_address

__all__ = ["Authenticator", "BatchHandler", "Handler", "IpcServer", "Peer"]

log = logging.getLogger("memories.ipc.server")


_PROBE_TIMEOUT: Final = 1.0
_BACKLOG: Final = 64
# Process-wide: os.umask is global state, so concurrent binds must not interleave.
_UMASK_LOCK = threading.Lock()


class IpcServer:
    """Serve Wire v1 requests on a Unix socket, answered by ``handler``.

    ``handler`` is a :class:`~memories.ipc.handling.BatchHandler`, or a plain function
    ``handler(request, peer)`` that returns the response object or raises
    :class:`~memories.errors.MemoriesError` (called in a thread of its own per request).
    """

    def __init__(
        self,
        socket_path: Path,
        handler: BatchHandler | Handler,
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
        self._handler = handler if isinstance(handler, BatchHandler) else per_request(handler)
        self._authenticate = authenticate
        self._max_connections = max_connections
        self._frame_timeout = frame_timeout
        self._idle_timeout = idle_timeout
        self._allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self._state_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: ServeLoop | None = None
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._lock_fd: int | None = None
        self._socket_id: tuple[int, int] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def connection_count(self) -> int:
        """Connections currently admitted (past the peer and capacity checks)."""
        loop = self._loop
        return 0 if loop is None else loop.connection_count

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
                    self._stopping.clear()
                    loop = ServeLoop(
                        listener,
                        self._handler,
                        authenticate=self._authenticate,
                        allowed_uid=self._allowed_uid,
                        max_connections=self._max_connections,
                        idle_timeout=self._idle_timeout,
                        frame_timeout=self._frame_timeout,
                        stopping=self._stopping,
                    )
                except OSError:
                    listener.close()
                    raise
            except (OSError, MemoriesError):
                self._remove_own_socket()
                self._release_lock()
                raise
            self._listener = listener
            self._loop = loop
            thread = threading.Thread(target=loop.run, name="memories-ipc", daemon=True)
            self._thread = thread
            thread.start()

    def stop(self, timeout: float = 5) -> None:
        """Stop listening, disconnect open connections and remove the socket file.

        Waits up to ``timeout`` seconds for the serving thread, which closes every connection
        as it ends. A request already being answered in a thread of its own is not
        interrupted; its answer is dropped. Never raises for a server that is not running.
        """
        with self._state_lock:
            thread, loop = self._thread, self._loop
            if thread is None or loop is None:
                return
            self._stopping.set()
            loop.interrupt()
            thread.join(timeout)
            if thread.is_alive():
                # A request still holds it; it stops after that, and the listener stays open
                # until then rather than being closed under it.
                log.warning("the IPC server thread did not stop within %.1f s", timeout)
                self._listener = None
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
        self._remove_own_socket()
        self._release_lock()
        self._thread = None
        self._loop = None

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
