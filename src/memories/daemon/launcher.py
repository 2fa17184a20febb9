"""Finding, starting and stopping the daemon from front ends.

The CLI never needs the user to think about the daemon: ``connect`` starts one when none is
listening (unless autostart is off) and waits until it answers.
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
from memories.errors import ConflictError, MemoriesError, UnavailableError
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

    Raises ``ConflictError`` when one is running, ``MemoriesError`` when it fails to start
    (the message points at its log).
    """
    if _listening(settings.socket_path):
        pid = daemon_pid(settings)
        raise ConflictError(f"a memories daemon is already running (pid {pid or 'unknown'})")
    log_path = settings.log_path
    log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    process = subprocess.Popen(
        [sys.executable, "-m", "memories", "daemon", "run", "--log-file", str(log_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise MemoriesError(f"the memories daemon exited at start; see {log_path}")
        if _listening(settings.socket_path) and daemon_pid(settings) == process.pid:
            return process.pid
        time.sleep(0.02)
    process.terminate()
    raise MemoriesError(f"the memories daemon did not start within {timeout:.0f}s; see {log_path}")


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
        except ConflictError:  # another front end started one just now
            return IpcClient(settings.socket_path, timeout=timeout)
        if notify is not None:
            minutes = settings.idle_lock_minutes
            notify(
                f"started the memories daemon (pid {pid}); the vault locks after "
                f"{minutes:g} idle minutes"
            )
    return IpcClient(settings.socket_path, timeout=timeout)
