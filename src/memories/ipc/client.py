"""The local IPC client: one Wire v1 request at a time over the daemon's Unix socket.

The connection is opened on the first call and reused. Before reusing it the client checks
that the daemon has not closed it (it closes idle connections), so a request is only ever sent
on a connection that was open at that moment; a request whose answer never arrives is not
retried, because the daemon may have carried it out.

With a ``grant_token`` every new connection first authenticates with it (``grant_authenticate``,
see :mod:`memories.ipc.wire`); the daemon then answers each request as that grant's MCP
caller. The token is kept only in memory and appears in no error or repr.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from memories.errors import ProtocolError, UnauthorizedError, UnavailableError
from memories.ipc.wire import (
    AUTH_OP,
    WIRE_VERSION,
    FrameDecoder,
    encode_frame,
    parse_response,
    unix_socket_address,
)

__all__ = [
    "MALFORMED",
    "ClientBase",
    "IpcClient",
    "answer_of",
    "auth_frame",
    "connect_failed",
    "connection_lost",
    "granted",
    "not_listening",
    "timed_out",
]

_RECV_SIZE: Final = 256 * 1024
MALFORMED: Final = (
    "the daemon sent a malformed response; run matching versions of the client and the daemon"
)


def not_listening(socket_path: Path) -> UnavailableError:
    """The error for a socket path nothing listens on."""
    return UnavailableError(
        f"no memories daemon is listening at {socket_path}; start it with `memories daemon start`"
    )


def timed_out(limit: float) -> UnavailableError:
    """The error for a call that got no answer within ``limit`` seconds."""
    return UnavailableError(
        f"the memories daemon did not answer within {limit:g} seconds; the request "
        "may or may not have been carried out; check `memories daemon status`"
    )


def connect_failed(socket_path: Path, exc: OSError) -> UnavailableError:
    """The error for a connection to ``socket_path`` that could not be made."""
    if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
        return not_listening(socket_path)
    return UnavailableError(
        f"cannot connect to the memories daemon at {socket_path} "
        f"({exc.strerror or type(exc).__name__}); check `memories daemon status`"
    )


def auth_frame(auth_id: int, token: str) -> bytes:
    """The frame that authenticates a new connection as the grant holding ``token``."""
    request = {"op": AUTH_OP, "token": token}
    return encode_frame({"v": WIRE_VERSION, "id": auth_id, "request": request})


def granted(response: dict[str, Any]) -> dict[str, Any] | None:
    """What the daemon said about the grant (id, name, scope) in its authentication answer."""
    grant = response.get("grant")
    return dict(grant) if isinstance(grant, dict) else None


def answer_of(value: object, request_id: int, disconnect: Callable[[], None]) -> dict[str, Any]:
    """The response object in the envelope ``value``, which must answer ``request_id``.

    Raises:
        ProtocolError: the envelope is malformed or answers another request.
        UnauthorizedError: the grant was refused; the daemon closes such a connection.
        MemoriesError: the subclass for the error the daemon reported.
    """
    try:
        return parse_response(value, expected_id=request_id)
    except (ProtocolError, UnauthorizedError):
        # Either side broke the protocol, or the daemon closes this grant's connection after
        # saying so; a fresh connection is the only safe state.
        disconnect()
        raise


def connection_lost() -> UnavailableError:
    """The error for a connection that broke before its answer arrived."""
    return UnavailableError(
        "the memories daemon closed the connection before answering; the request may or "
        "may not have been carried out; check `memories daemon status`"
    )


class ClientBase:
    """What both IPC clients keep: where the daemon listens, the call timeout, the grant
    token and what the daemon said of it, and the ids of the requests sent."""

    def __init__(
        self, socket_path: Path, *, timeout: float = 30.0, grant_token: str | None = None
    ) -> None:
        self.socket_path = Path(socket_path)
        self._timeout = timeout
        self._grant_token = grant_token
        #: The daemon's answer to the last authentication: ``{id, name, scope}``.
        self.grant: dict[str, Any] | None = None
        self._next_id = 0

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id


class IpcClient(ClientBase):
    """Call the memories daemon listening at ``socket_path``.

    ``timeout`` bounds each call from connecting to the last byte of the answer. Not meant to
    be shared between threads for throughput: calls from several threads are serialized.

    ``grant_token`` makes every connection authenticate as that MCP grant before its first
    request; :attr:`grant` then holds what the daemon said about the grant (id, name, scope).
    """

    def __init__(
        self, socket_path: Path, *, timeout: float = 30.0, grant_token: str | None = None
    ) -> None:
        super().__init__(socket_path, timeout=timeout, grant_token=grant_token)
        self._sock: socket.socket | None = None
        self._decoder = FrameDecoder()
        self._values: collections.deque[object] = collections.deque()
        self._lock = threading.Lock()

    def call(self, request: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send one request and return the daemon's response object.

        ``timeout`` replaces the client's timeout for this call (a request known to take
        long, such as storing a large file).

        Raises:
            ProtocolError: the request cannot be framed (not JSON-encodable, or larger than
                the frame limit; nothing is sent), or the daemon's answer is malformed.
            UnavailableError: no daemon is listening, the connection broke before the answer
                arrived (the request may or may not have been carried out), or the call took
                longer than the timeout.
            UnauthorizedError: with a grant token, the token is wrong, revoked or expired
                (the connection is closed; the next call tries again).
            LockedError: with a grant token, the store is locked.
            MemoriesError: the subclass for the error the daemon reported (busy, denied,
                locked, not found, ...), rebuilt from its code.
        """
        with self._lock:
            request_id = self._new_id()
            frame = encode_frame({"v": WIRE_VERSION, "id": request_id, "request": request})
            limit = self._timeout if timeout is None else timeout
            deadline = time.monotonic() + limit
            sock = self._connection(deadline, limit)
            answered = False
            try:
                self._send(sock, frame, deadline, limit)
                value = self._receive(sock, deadline, limit)
                answered = True
            finally:
                if not answered:  # a half-finished exchange leaves the stream out of step
                    self._disconnect()
            return answer_of(value, request_id, self._disconnect)

    def close(self) -> None:
        """Close the connection, if one is open. Never raises."""
        with self._lock:
            self._disconnect()

    def __enter__(self) -> IpcClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- connection -----------------------------------------------------------------------

    def _connection(self, deadline: float, limit: float) -> socket.socket:
        if self._sock is not None and not _closed_by_peer(self._sock):
            return self._sock
        self._disconnect()
        address = unix_socket_address(self.socket_path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.connect(address)
        except TimeoutError as exc:
            sock.close()
            raise UnavailableError(
                f"the memories daemon at {self.socket_path} did not accept the connection "
                f"within {self._timeout:g} seconds; check `memories daemon status`"
            ) from exc
        except OSError as exc:
            sock.close()
            raise connect_failed(self.socket_path, exc) from exc
        self._sock = sock
        self._decoder = FrameDecoder()
        self._values.clear()
        if self._grant_token is not None:
            self._authenticate(sock, self._grant_token, deadline, limit)
        return sock

    def _authenticate(self, sock: socket.socket, token: str, deadline: float, limit: float) -> None:
        """Send ``grant_authenticate`` on a new connection; closes it unless it succeeds."""
        auth_id = self._new_id()
        authenticated = False
        try:
            self._send(sock, auth_frame(auth_id, token), deadline, limit)
            self.grant = granted(
                parse_response(self._receive(sock, deadline, limit), expected_id=auth_id)
            )
            authenticated = True
        finally:
            if not authenticated:
                self._disconnect()

    def _disconnect(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        self._values.clear()

    # -- exchange -------------------------------------------------------------------------

    def _send(self, sock: socket.socket, frame: bytes, deadline: float, limit: float) -> None:
        try:
            sock.settimeout(_remaining(deadline))
            sock.sendall(frame)
        except TimeoutError as exc:
            raise timed_out(limit) from exc
        except (BrokenPipeError, ConnectionResetError):
            # The daemon may have refused the connection (busy, denied) and closed it before
            # reading; its error envelope is still waiting to be read.
            pass
        except OSError as exc:
            raise connection_lost() from exc

    def _receive(self, sock: socket.socket, deadline: float, limit: float) -> object:
        while not self._values:
            try:
                sock.settimeout(_remaining(deadline))
                data = sock.recv(_RECV_SIZE)
            except TimeoutError as exc:
                raise timed_out(limit) from exc
            except ConnectionResetError:
                data = b""
            except OSError as exc:
                raise connection_lost() from exc
            if not data:
                raise connection_lost()
            try:
                self._values.extend(self._decoder.feed(data))
            except ProtocolError as exc:
                raise ProtocolError(MALFORMED) from exc
        return self._values.popleft()


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    return remaining


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the daemon has closed (or written unasked to) an idle connection."""
    previous = sock.gettimeout()
    try:
        sock.setblocking(False)
        data = sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return False  # nothing to read: the connection is open and quiet
    except OSError:
        return True
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(previous)
    # End of file (``b""``), or bytes nobody asked for: either way the stream is unusable.
    del data
    return True
