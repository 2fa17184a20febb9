"""Store failures that explain themselves, and the translation of OS and SQLite errors.

The classes below are leaves of the one hierarchy in :mod:`memories.errors` and keep their
parent's wire ``code``, so clients that only know the codes behave as before; code inside the
process can tell the cases apart::

    IntegrityError
    ├── NotAStoreError        the file is not a memories store (or not SQLite at all)
    ├── MalformedHeaderError  a header row is missing or cannot be parsed
    ├── UnsafeKdfError        the header's key-derivation parameters are below the floor
    ├── HeaderChangedError    the header does not belong to the data (swapped back, replaced)
    └── RollbackError         the store is older than, or cannot be matched with, its anchors
    UsageError
    └── NewerFormatError      the file was written by a newer release

Foreign exceptions (``OSError``, ``sqlite3.Error``) are translated at the store's boundary into
a ``MemoriesError`` whose message names the cause in words ("the disk is full", "the data home
is read-only") and never the raw exception text, which can carry paths of other users or bytes
of the file.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from memories.errors import IntegrityError, MemoriesError, UsageError

__all__ = [
    "HeaderChangedError",
    "MalformedHeaderError",
    "NewerFormatError",
    "NotAStoreError",
    "RollbackError",
    "UnsafeKdfError",
    "os_reason",
    "sqlite_boundary",
    "sqlite_reason",
]


class NotAStoreError(IntegrityError):
    """The file exists but is not a memories store."""


class MalformedHeaderError(IntegrityError):
    """A header row the store needs is missing or unreadable."""


class UnsafeKdfError(IntegrityError):
    """The header asks for key-derivation parameters below the safe minimum."""


class HeaderChangedError(IntegrityError):
    """The password opens the header present, but that header is not this store's own."""


class RollbackError(IntegrityError):
    """The store cannot be matched with its rollback anchors; ``accept_rollback`` gets past."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # "missing", "damaged", "older" or "diverged"


class NewerFormatError(UsageError):
    """The file was written by a newer release of memories."""


_OS_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the data home is on a read-only file system",
    errno.EACCES: "the data home is read-only for this user (permission denied)",
    errno.EPERM: "the data home is read-only for this user (operation not permitted)",
    errno.EIO: "the disk reported an I/O error",
    errno.ENOENT: "a folder of the data home is missing",
    errno.ENOTDIR: "a path of the data home is not a folder",
}

_SQLITE_REASONS = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_IOERR": "the disk reported an I/O error",
    "SQLITE_READONLY": "the data home is read-only",
    "SQLITE_CANTOPEN": "the store file cannot be opened (is the data home read-only or missing?)",
    "SQLITE_BUSY": "the file is busy",
    "SQLITE_LOCKED": "the file is busy",
    "SQLITE_CORRUPT": "the file is corrupt",
    "SQLITE_NOTADB": "the file is not a database",
    "SQLITE_PERM": "the data home is read-only for this user",
    "SQLITE_AUTH": "the data home is read-only for this user",
}


def os_reason(exc: OSError) -> str:
    """A short, content-free description of an OS failure."""
    return _OS_REASONS.get(exc.errno or 0, "the operating system refused the operation")


def sqlite_reason(exc: sqlite3.Error) -> str:
    """A short, content-free description of a SQLite failure."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return _SQLITE_REASONS.get("_".join(name.split("_")[:2]), "a database error occurred")


def sqlite_code(exc: sqlite3.Error) -> str:
    """The primary SQLite result code name (``SQLITE_FULL``), or "" when unknown."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return "_".join(name.split("_")[:2])


@contextmanager
def sqlite_boundary(doing: str) -> Iterator[None]:
    """Translate ``sqlite3``/``OSError`` raised inside into a ``MemoriesError`` about ``doing``.

    A corrupt file becomes ``IntegrityError``; everything else a ``MemoriesError`` naming the
    cause, e.g. "cannot read the store: the disk reported an I/O error".
    """
    try:
        yield
    except sqlite3.Error as exc:
        code = sqlite_code(exc)
        if code in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
            raise IntegrityError(
                f"cannot {doing}: the store file is damaged; restore it from a backup"
            ) from exc
        raise MemoriesError(f"cannot {doing}: {sqlite_reason(exc)}") from exc
    except OSError as exc:
        raise MemoriesError(f"cannot {doing}: {os_reason(exc)}") from exc
