"""An SSH agent inside the daemon, for the length of one ``memories run --ssh-key``.

The program (``ssh``, ``git``, ``rsync`` ...) finds the agent through ``SSH_AUTH_SOCK`` and
asks it to sign its login challenge; the private key stays in the daemon and is never written
or handed out. Only the run's own process tree may use the agent: a connection from any other
process, even one of the same user, is closed unanswered.

The agent protocol (draft-miller-ssh-agent): each message is a 32-bit length, a type byte and
a payload. Served: list the keys (11, answered by 12) and sign (13, answered by 14). Every
other request (adding, removing or locking keys, extensions) gets FAILURE (5): the keys are
the vault's, not the client's to change.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from memories.crypto.keys import SshSigner

__all__ = ["KeyAgent", "descends_from"]

_REQUEST_IDENTITIES: Final = 11
_IDENTITIES_ANSWER: Final = 12
_SIGN_REQUEST: Final = 13
_SIGN_RESPONSE: Final = 14
_FAILURE: Final = 5
_MAX_MESSAGE: Final = 256 * 1024  # a sign request carries a session id and a few names
_MAX_CONNECTIONS: Final = 8
_ALLOW_SECONDS: Final = 2.0
_UCRED = struct.Struct("3i")


def descends_from(pid: int, root: int, proc: Path = Path("/proc")) -> bool:
    """Whether process ``pid`` is ``root`` or one of its descendants (walks parent pids)."""
    for _ in range(256):  # deeper than any real process tree
        if pid == root:
            return True
        if pid <= 1:
            return False
        try:
            stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return False
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rpartition(")")[2].split()
        if len(fields) < 2 or not fields[1].isdigit():
            return False
        pid = int(fields[1])
    return False


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _take_string(payload: bytes, at: int) -> tuple[bytes, int] | None:
    if at + 4 > len(payload):
        return None
    size = int.from_bytes(payload[at : at + 4], "big")
    end = at + 4 + size
    if end > len(payload):
        return None
    return payload[at + 4 : end], end


def _recv_exact(conn: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class KeyAgent:
    """Serves ``signers`` on a socket in a fresh 0700 folder (:attr:`path`) until closed.

    Connections are answered only once :meth:`allow` names the process tree that may use the
    agent. Use as a context manager: closing stops every connection, forgets the keys and
    removes the folder.

    ``on_sign`` is called (with the signer) before each signature is made.
    """

    def __init__(
        self,
        signers: Sequence[SshSigner],
        *,
        on_sign: Callable[[SshSigner], None] | None = None,
        proc: Path = Path("/proc"),
    ) -> None:
        self._signers = list(signers)
        self._on_sign = on_sign
        self._proc = proc
        self._root: int | None = None
        self._allowed = threading.Event()
        self._closed = False
        self._guard = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._folder = tempfile.mkdtemp(prefix="memories-agent-")  # 0700
        self.path = os.path.join(self._folder, "agent.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self._listener.listen(_MAX_CONNECTIONS)
        self._acceptor = threading.Thread(
            target=self._accept, name="memories-ssh-agent", daemon=True
        )

    def __enter__(self) -> KeyAgent:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def allow(self, root: int) -> None:
        """Answer processes in the tree of ``root`` (the run's program) from now on."""
        self._root = root
        self._allowed.set()

    def close(self) -> None:
        """Stop serving, forget the keys and remove the socket's folder."""
        with self._guard:
            self._closed = True
            connections = list(self._connections)
        self._allowed.set()  # an accept waiting for the program's start stops waiting
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        with contextlib.suppress(OSError):
            self._listener.close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._acceptor.is_alive():
            self._acceptor.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)
        for signer in self._signers:
            signer.forget()
        self._signers.clear()
        shutil.rmtree(self._folder, ignore_errors=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            pid, uid, _ = _UCRED.unpack(
                conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            )
            # The program may ask before its start is reported back: give that a moment.
            self._allowed.wait(_ALLOW_SECONDS)
            root = self._root
            with self._guard:
                refused = (
                    self._closed
                    or uid != os.geteuid()
                    or root is None
                    or len(self._connections) >= _MAX_CONNECTIONS
                    or not descends_from(pid, root, self._proc)
                )
                if not refused:
                    self._connections.add(conn)
            if refused:
                conn.close()
                continue
            thread = threading.Thread(
                target=self._serve, args=(conn,), name="memories-ssh-agent-conn", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                header = _recv_exact(conn, 4)
                if header is None:
                    return
                length = int.from_bytes(header, "big")
                if not 0 < length <= _MAX_MESSAGE:
                    return
                message = _recv_exact(conn, length)
                if message is None:
                    return
                conn.sendall(_string(self._answer(message)))
        except OSError:
            return
        finally:
            with self._guard:
                self._connections.discard(conn)
            conn.close()

    def _answer(self, message: bytes) -> bytes:
        kind, payload = message[0], message[1:]
        if kind == _REQUEST_IDENTITIES:
            listed = [_string(s.blob) + _string(s.comment.encode("ascii")) for s in self._signers]
            return bytes([_IDENTITIES_ANSWER]) + len(listed).to_bytes(4, "big") + b"".join(listed)
        if kind == _SIGN_REQUEST:
            blob = _take_string(payload, 0)
            data = _take_string(payload, blob[1]) if blob is not None else None
            if blob is None or data is None or data[1] + 4 != len(payload):
                return bytes([_FAILURE])
            flags = int.from_bytes(payload[data[1] :], "big")
            for signer in self._signers:
                if signer.blob == blob[0]:
                    if self._on_sign is not None:
                        self._on_sign(signer)
                    signature = signer.sign(data[0], flags)
                    if signature is not None:
                        return bytes([_SIGN_RESPONSE]) + _string(signature)
        return bytes([_FAILURE])
