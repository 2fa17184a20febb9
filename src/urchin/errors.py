"""The urchin error hierarchy.

::

    UrchinError                   "error"              exit 1
    ├── UsageError                "invalid_input"      exit 2   bad arguments or event fields
    │   ├── MalformedEventError   "malformed"          exit 2   a line or body is not an Event
    │   └── RedactionError        "redaction"          exit 2   redaction would break a field
    ├── ConfigError               "config"             exit 1   invalid or unreadable config.toml
    ├── JournalWriteError         "journal_write"      exit 1   the journal cannot be appended to
    ├── JournalReadError          "journal_read"       exit 1   the journal cannot be read
    ├── IndexUnavailableError     "index_unavailable"  exit 1   index.db unusable now (readers
    │   │                                                       fall back to a linear scan)
    │   └── IndexCorruptError     "index_corrupt"      exit 1   index.db damaged; it is rebuilt
    ├── EndpointError             "endpoint"           exit 1   a model endpoint cannot be used
    └── ProjectionError           "projection"         exit 1   the daily note cannot be updated

The quoted word is the error's ``code`` (stable, used on the wire and in ``--json``).
Every message tells the user what went wrong and what to do, and never echoes
event content or tokens.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EndpointError",
    "IndexCorruptError",
    "IndexUnavailableError",
    "JournalReadError",
    "JournalWriteError",
    "MalformedEventError",
    "ProjectionError",
    "RedactionError",
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


class RedactionError(UsageError):
    """An event field would no longer be valid once its secrets were replaced by markers.

    The event is not written; the message names the field, never its value.
    """

    code = "redaction"


class IndexUnavailableError(UrchinError):
    """The index cannot be used now (read-only folder, locked, no journal yet);
    readers answer from a linear scan of the journal instead."""

    code = "index_unavailable"


class IndexCorruptError(IndexUnavailableError):
    """``index.db`` is damaged; it is only a cache, so it is deleted and rebuilt."""

    code = "index_corrupt"


class EndpointError(UrchinError):
    """A model endpoint (chat or embeddings) could not be used; the message names no secrets."""

    code = "endpoint"


class ProjectionError(UrchinError):
    """The daily note cannot be updated: broken markers, or the vault cannot be read or written.

    The note is never modified when this is raised.
    """

    code = "projection"
