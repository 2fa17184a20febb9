"""The single-writer lock: an exclusive ``flock`` on a file beside the store.

The lock is held for as long as the store is open, so exactly one cooperating process (normally
the daemon) writes the file. The holder's PID is written into the lock file so a second opener can
say who is in the way. The kernel drops the lock when the holder dies, however it dies.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from memories.errors import BusyError, MemoriesError
from memories.store.errors import os_reason

__all__ = ["StoreLock", "lock_path_for"]


def lock_path_for(store_path: Path) -> Path:
    """The lock file that guards ``store_path``."""
    return store_path.with_name(store_path.name + ".lock")


class StoreLock:
    """An exclusive, non-blocking OS lock; ``acquire`` raises ``BusyError`` naming the holder."""

    def __init__(self, store_path: Path) -> None:
        self.path = lock_path_for(store_path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock.

        Raises ``BusyError`` when another process holds it, ``MemoriesError`` when the lock file
        cannot be created.
        """
        if self._fd is not None:
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise MemoriesError(
                f"cannot open the store: cannot create its lock file {self.path}: {os_reason(exc)}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                who = f"PID {holder}" if holder else "another process"
                raise BusyError(
                    f"the store is in use by {who}; stop it (`memories daemon stop`) or wait"
                ) from exc
            raise MemoriesError(f"cannot lock {self.path}: {os_reason(exc)}") from exc
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError as exc:
            os.close(fd)  # closing drops the flock too
            raise MemoriesError(
                f"cannot open the store: cannot write its lock file {self.path}: {os_reason(exc)}"
            ) from exc
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
