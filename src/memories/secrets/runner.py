"""Running a program with secrets in its environment, inside the daemon, without a shell.

The values never leave the daemon: the CLI hands the daemon its standard input, output and
error (file descriptors passed over a private Unix socket, ``SCM_RIGHTS``), and the daemon
starts the program on them with the values in its environment. The program's output goes
straight to the user's terminal; neither the daemon nor the CLI reads it.

The channel, one connection per run:

1. the CLI listens on a socket in a fresh 0700 folder and sends its path with the request;
2. the daemon connects (after the run's intent is durable) and checks that the listener
   belongs to this user and to the caller's elevation namespace (:func:`receive_stdio`);
3. the CLI sends its three descriptors (:class:`StdioChannel`);
4. while the program runs, the CLI forwards the signals it gets (``signal N`` lines) and the
   daemon passes them on (only SIGINT, SIGTERM, SIGHUP and SIGQUIT);
5. when the program ends the daemon writes one line ``{"exit_code", "signal"}``, so the CLI
   learns the status even if the audit of the outcome fails afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memories.errors import DeniedError, MemoriesError, NotFoundError, UsageError

__all__ = [
    "FORWARDED_SIGNALS",
    "RunOutcome",
    "StdioChannel",
    "find_program",
    "run_on_channel",
]

FORWARDED_SIGNALS: Final = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})
_CONNECT_SECONDS: Final = 10.0
_LINE_LIMIT: Final = 256
_UCRED = struct.Struct("3i")


@dataclass(frozen=True)
class RunOutcome:
    """How a program run ended: its exit code, or the signal that ended it."""

    exit_code: int | None
    signal: int | None
    duration_ms: int

    def to_line(self) -> bytes:
        return json.dumps({"exit_code": self.exit_code, "signal": self.signal}).encode() + b"\n"


def find_program(name: str, environment: Mapping[str, str], cwd: str) -> str:
    """The absolute path ``name`` runs as: searched on the caller's ``PATH`` when it has no
    slash, taken relative to ``cwd`` when it has one.

    Raises:
        NotFoundError: no such executable.
    """
    if "/" in name:
        path = Path(cwd, name) if not name.startswith("/") else Path(name)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise NotFoundError("that program was not found or is not executable")
    found = shutil.which(name, path=environment.get("PATH", os.defpath))
    if found is None:
        raise NotFoundError("that program was not found on PATH")
    return str(Path(found).absolute())


# -- the daemon's side ------------------------------------------------------------------------


def _connect(path: str, namespace_of: Callable[[int], str], namespace: str) -> socket.socket:
    if not hasattr(socket, "SO_PEERCRED"):
        raise UsageError("memories run needs a system that reports peer credentials (Linux)")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(_CONNECT_SECONDS)
    try:
        sock.connect(path)
        pid, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except OSError as exc:
        sock.close()
        raise UsageError("the run's terminal channel could not be reached") from exc
    if uid != os.geteuid() or namespace_of(pid) != namespace:
        sock.close()
        raise DeniedError("the run's terminal channel belongs to another process")
    return sock


def _receive_fds(sock: socket.socket) -> list[int]:
    try:
        _, fds, _, _ = socket.recv_fds(sock, 16, 3)
    except OSError as exc:
        raise UsageError("the run's terminal was not handed over") from exc
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise UsageError("the run's terminal was not handed over")
    return list(fds)


def _relay_signals(sock: socket.socket, child: subprocess.Popen[bytes]) -> None:
    """Pass the CLI's ``signal N`` lines to the child until the channel closes."""
    buffer = b""
    while True:
        try:
            chunk = sock.recv(_LINE_LIMIT)
        except OSError:
            return
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            word, _, number = line.decode("ascii", errors="replace").partition(" ")
            if word == "signal" and number.isdigit() and int(number) in FORWARDED_SIGNALS:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(int(number))
        buffer = buffer[-_LINE_LIMIT:]


def run_on_channel(
    channel: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    namespace: str,
    namespace_of: Callable[[int], str],
    on_start: Callable[[int], None] | None = None,
) -> RunOutcome:
    """Receive the caller's terminal on ``channel``, run ``argv`` on it with ``env`` (no
    shell) in ``cwd``, and report how it ended, to the caller and as the return value.

    ``namespace_of(pid)`` names the elevation namespace of a process; the channel's owner must
    be in ``namespace`` (the caller's). ``on_start`` is called with the program's pid as soon
    as it runs.

    Raises:
        UsageError: the channel cannot be reached or hands over no terminal; the folder does
            not exist.
        DeniedError: the channel belongs to another user or session.
        NotFoundError: the program cannot be started.
    """
    sock = _connect(channel, namespace_of, namespace)
    try:
        fds = _receive_fds(sock)
        started = time.monotonic()
        try:
            child = subprocess.Popen(  # no shell: argv as given
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=fds[0],
                stdout=fds[1],
                stderr=fds[2],
                close_fds=True,
                start_new_session=True,  # not in the daemon's group: a daemon stop spares it
            )
        except FileNotFoundError as exc:
            raise NotFoundError("that program or folder was not found") from exc
        except OSError as exc:
            raise NotFoundError(f"the program could not be started (errno {exc.errno})") from exc
        finally:
            for fd in fds:
                os.close(fd)
        if on_start is not None:
            on_start(child.pid)
        sock.settimeout(None)
        relay = threading.Thread(
            target=_relay_signals, args=(sock, child), name="memories-run-signals", daemon=True
        )
        relay.start()
        code = child.wait()
        duration_ms = int((time.monotonic() - started) * 1000)
        outcome = (
            RunOutcome(None, -code, duration_ms)
            if code < 0
            else RunOutcome(code, None, duration_ms)
        )
        with contextlib.suppress(OSError):
            sock.sendall(outcome.to_line())
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        relay.join(timeout=5)
        return outcome
    finally:
        sock.close()


# -- the CLI's side ---------------------------------------------------------------------------


class StdioChannel:
    """The CLI's end: a private listening socket that hands this process's standard input,
    output and error to the daemon, forwards signals and receives the outcome.

    Use as a context manager; the folder and socket are removed on exit.
    """

    def __init__(self, stdio: Sequence[int] = (0, 1, 2)) -> None:
        self._stdio = list(stdio)
        self._folder = tempfile.mkdtemp(prefix="memories-run-")  # 0700
        self.path = os.path.join(self._folder, "tty")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self._listener.listen(1)
        self._listener.settimeout(_CONNECT_SECONDS * 6)
        self._conn: socket.socket | None = None
        self._guard = threading.Lock()
        self._pending: list[int] = []
        self._connected = threading.Event()
        self.outcome: dict[str, int | None] | None = None
        self.error: MemoriesError | None = None
        self._thread = threading.Thread(target=self._serve, name="memories-run-tty", daemon=True)

    def __enter__(self) -> StdioChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            # Wakes an accept() still waiting (close alone does not, on Linux).
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._guard:
            conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._thread.join(timeout=5)
        shutil.rmtree(self._folder, ignore_errors=True)

    def _serve(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return  # closed: the request failed before the daemon connected
        _, uid, _ = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.geteuid():
            conn.close()
            self.error = DeniedError("another user connected to the run's terminal channel")
            return
        self._connected.set()
        conn.settimeout(None)
        try:
            socket.send_fds(conn, [b"stdio"], self._stdio)
            with self._guard:
                self._conn = conn
                pending, self._pending = self._pending, []
            for signum in pending:  # signals that came before the program started
                conn.sendall(f"signal {signum}\n".encode("ascii"))
            data = b""
            while b"\n" not in data:
                chunk = conn.recv(_LINE_LIMIT)
                if not chunk:
                    return
                data += chunk
        except OSError:
            return
        try:
            doc = json.loads(data.partition(b"\n")[0])
            self.outcome = {"exit_code": doc.get("exit_code"), "signal": doc.get("signal")}
        except (ValueError, AttributeError):
            return

    def settle(self, timeout: float = 5.0) -> None:
        """Once the daemon took the terminal, wait (up to ``timeout``) until the outcome line
        is read: the daemon writes it before it audits, so an error about the audit can come
        back over the other connection first."""
        if self._connected.is_set():
            self._thread.join(timeout)

    def forward(self, signum: int) -> None:
        """Pass ``signum`` to the program (through the daemon), now or once it has started."""
        if signum not in FORWARDED_SIGNALS:
            return
        with self._guard:
            conn = self._conn
            if conn is None:
                self._pending.append(int(signum))  # sent once the program runs
                return
        with contextlib.suppress(OSError):
            conn.sendall(f"signal {int(signum)}\n".encode("ascii"))
