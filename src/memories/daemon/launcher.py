"""Finding, starting and stopping the daemon from front ends.

The CLI never needs the user to think about the daemon: ``connect`` starts one when none is
listening (unless autostart is off) and waits until it reports that it serves, or why not.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memories.config import Settings
from memories.daemon.environment import daemon_environment
from memories.daemon.startup import STATUS_FD_OPTION, wait_until_ready
from memories.errors import BusyError, ConflictError, MemoriesError, UnavailableError
from memories.ipc import IpcClient
from memories.processes import alive

__all__ = [
    "connect",
    "daemon_pid",
    "daemon_status",
    "pid_file",
    "start_daemon",
    "stop_daemon",
]

_START_TIMEOUT = 20.0


def pid_file(settings: Settings) -> Path:
    """Where the running daemon records its PID."""
    return settings.socket_path.with_name("daemon.pid")


def _listening(path: Path) -> bool:
    """Whether something accepts connections on the socket (cheap: no request is sent)."""
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(os.fspath(path))
        except OSError:
            return False
    return True


def daemon_pid(settings: Settings) -> int | None:
    """The running daemon's PID, or None."""
    try:
        text = pid_file(settings).read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not text.isdigit() or not alive(int(text)):
        return None
    return int(text)


def start_daemon(settings: Settings, *, timeout: float = _START_TIMEOUT) -> int:
    """Start a daemon in the background and wait until it answers; returns its PID.

    The child gets an explicit environment (:func:`daemon_environment`: no password, token or
    other secret the front end may hold) and reports its start on a pipe (see
    :mod:`memories.daemon.startup`).

    Raises:
        ConflictError: a daemon is already listening.
        MemoriesError: the subclass of the error that stopped the daemon at start (a store
            that is busy, not a memories store, from a newer release, ...), or a plain one
            naming the log when it died without saying why or did not start in time.
    """
    if _listening(settings.socket_path):
        pid = daemon_pid(settings)
        raise ConflictError(f"a memories daemon is already running (pid {pid or 'unknown'})")
    log_path = settings.log_path
    log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    read_fd, write_fd = os.pipe()
    try:
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memories",
                    "daemon",
                    "run",
                    "--log-file",
                    str(log_path),
                    STATUS_FD_OPTION,
                    str(write_fd),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=daemon_environment(os.environ),
                pass_fds=(write_fd,),
                start_new_session=True,
                close_fds=True,
            )
        finally:
            # Only the child holds the write end now, so its exit ends the wait below.
            os.close(write_fd)
        wait_until_ready(read_fd, process, timeout=timeout, log_path=log_path)
    finally:
        os.close(read_fd)
    return process.pid


def stop_daemon(settings: Settings, *, timeout: float = 10.0) -> int | None:
    """Stop the running daemon (SIGTERM, then wait); returns its PID or None if none ran.

    Raises ``MemoriesError`` when it does not exit in time.
    """
    pid = daemon_pid(settings)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            raise MemoriesError(f"the memories daemon (pid {pid}) did not stop in {timeout:.0f}s")
        time.sleep(0.02)
    return pid


def daemon_status(settings: Settings) -> dict[str, Any] | None:
    """What the running daemon reports about itself, or None when none is listening."""
    if not _listening(settings.socket_path):
        return None
    with IpcClient(settings.socket_path, timeout=10) as client:
        status = client.call({"op": "status"})
    return {"pid": daemon_pid(settings), "socket": str(settings.socket_path), **status}


def connect(
    settings: Settings,
    *,
    autostart: bool = True,
    notify: Callable[[str], None] | None = None,
    timeout: float = 60.0,
) -> IpcClient:
    """A client for the daemon, starting one first when none listens and ``autostart`` is on.

    Raises ``UnavailableError`` when no daemon listens and autostart is off.
    """
    if not _listening(settings.socket_path):
        if not autostart:
            raise UnavailableError(
                "no memories daemon is running; start one with `memories daemon start`"
            )
        try:
            pid = start_daemon(settings)
        except (ConflictError, BusyError):
            # Another front end started one just now: ours found the store or the socket
            # taken. Use that daemon once it listens; otherwise the error stands.
            if not _wait_listening(settings.socket_path, _START_TIMEOUT):
                raise
            return IpcClient(settings.socket_path, timeout=timeout)
        if notify is not None:
            minutes = settings.idle_lock_minutes
            notify(
                f"started the memories daemon (pid {pid}); the vault locks after "
                f"{minutes:g} idle minutes"
            )
    return IpcClient(settings.socket_path, timeout=timeout)


def _wait_listening(path: Path, timeout: float) -> bool:
    """Whether something listens on ``path`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _listening(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
