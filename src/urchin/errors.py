"""The urchin error hierarchy.

::

    UrchinError                 code: "error"          exit 1
    ├── UsageError              code: "invalid_input"  exit 2   bad arguments or event fields
    ├── ConfigError             code: "config"         exit 1   unreadable or invalid config.toml
    ├── JournalWriteError       code: "journal_write"  exit 1   the journal cannot be appended to
    ├── JournalReadError        code: "journal_read"   exit 1   the journal cannot be read
    └── MalformedEventError     code: "malformed"      exit 2   a line or body is not an Event

Every message tells the user what went wrong and what to do, and never echoes
event content or tokens.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "JournalReadError",
    "JournalWriteError",
    "MalformedEventError",
    "UrchinError",
    "UsageError",
]


class UrchinError(Exception):
    """Base of every error urchin raises on purpose."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(UrchinError):
    """The caller passed something we cannot accept (blank content, bad option)."""

    code = "invalid_input"
    exit_code = 2


class ConfigError(UrchinError):
    """config.toml cannot be read or holds an invalid value."""

    code = "config"


class JournalWriteError(UrchinError):
    """The journal file could not be created or appended to."""

    code = "journal_write"


class JournalReadError(UrchinError):
    """The journal exists but cannot be read (permissions, I/O error)."""

    code = "journal_read"


class MalformedEventError(UsageError):
    """A journal line or request body does not describe a valid Event."""

    code = "malformed"
