"""Atomic file writes: the one way urchin replaces a whole file (config, checkpoints, notes).

A write goes to a temporary file beside the target (a fresh name, created
exclusively), is fsynced, renamed over the target, and then the folder is fsynced
so the rename itself survives a crash. A reader therefore sees the old file or the
new one, never a mix, and a crash leaves at most a stray ``.<name>.<random>.tmp``.
The journal is not written this way: it is only ever appended to (see
:mod:`urchin.journal`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["fsync_folder", "write_atomically"]

log = logging.getLogger(__name__)


def write_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int = 0o600,
    like: os.stat_result | None = None,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``data``: temporary file, fsync, rename, fsync of the folder.

    Args:
        path: the file to replace; its folder must exist.
        data: the whole new content.
        mode: permission bits of a new file (the umask applies).
        like: the stat of the file being replaced: its permission bits are kept,
            and its owner too where the process may give a file away.
        before_replace: called after the data is durable and just before the
            rename; whatever it raises stops the write (the target is untouched).

    Raises:
        OSError: the temporary file cannot be created, written or renamed; the
            target is untouched and the temporary file removed.
    """
    folder = path.parent
    tmp = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # A private start when the bits are copied from ``like`` afterwards.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600 if like is not None else mode)
    replaced = False
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if like is not None:
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
                if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                    # Only a privileged writer can give the file back to its owner;
                    # anyone else keeps it under their own name, as editors do.
                    with contextlib.suppress(PermissionError):
                        os.fchown(fd, like.st_uid, like.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
        replaced = True
    finally:
        if not replaced:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    fsync_folder(folder)


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable; logs (never raises) when it cannot."""
    # The rename has already happened, so a failure here only weakens durability
    # after a crash; reporting the write as failed would be wrong.
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        log.warning("cannot open %s to flush the rename: %s", folder, exc.strerror)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some filesystems cannot fsync a directory at all.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            log.warning("cannot flush %s after the rename: %s", folder, exc.strerror)
    finally:
        os.close(fd)
