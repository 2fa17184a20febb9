"""The memories error hierarchy. Every error has a stable wire ``code``.

::

    MemoriesError               code: "error"           exit 1
    ├── UsageError              code: "invalid_input"   exit 2
    ├── LockedError             code: "locked"          exit 3
    ├── DeniedError             code: "denied"          exit 3
    └── IntegrityError          code: "integrity"       exit 1   any decrypt/verify failure (opaque)

Messages tell the user what to do and never contain secrets, plaintext or raw input.
"""

from __future__ import annotations

__all__ = ["DeniedError", "IntegrityError", "LockedError", "MemoriesError", "UsageError"]


class MemoriesError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(MemoriesError):
    code = "invalid_input"
    exit_code = 2


class LockedError(MemoriesError):
    code = "locked"
    exit_code = 3


class DeniedError(MemoriesError):
    code = "denied"
    exit_code = 3


class IntegrityError(MemoriesError):
    """One opaque error for every failed decryption or verification."""

    code = "integrity"
