"""The memories error hierarchy. Every error has a stable wire ``code``.

::

    MemoriesError               code: "error"           exit 1
    ├── UsageError              code: "invalid_input"   exit 2   bad request, bad arguments
    │   ├── ProtocolError       code: "protocol"        exit 2   malformed frame or wire envelope
    │   └── NewerFormatError*                           exit 2   written by a newer release
    ├── NotFoundError           code: "not_found"       exit 1
    ├── ConflictError           code: "conflict"        exit 1   stale head, existing store, ...
    ├── BusyError               code: "busy"            exit 1   store in use, too many connections
    ├── UnavailableError        code: "unavailable"     exit 1   no daemon is listening
    ├── LockedError             code: "locked"          exit 3
    ├── DeniedError             code: "denied"          exit 3
    ├── UnauthorizedError       code: "unauthorized"    exit 3   grant token wrong, revoked, expired
    └── IntegrityError          code: "integrity"       exit 1   any decrypt/verify failure (opaque)
        ├── NotAStoreError*                                      the file is not a memories store
        ├── MalformedHeaderError*                                a header row is missing or bad
        ├── UnsafeKdfError*                                      KDF parameters below the floor
        ├── HeaderChangedError*                                  right password, foreign header
        └── RollbackError*                                       anchors do not vouch for the store

    * defined in memories.store.errors; they keep their parent's wire code, so a client sees
      the parent class with the store's message.

Messages tell the user what to do and never contain secrets, plaintext or raw input.
"""

from __future__ import annotations

__all__ = [
    "UNAUTHORIZED_MESSAGE",
    "BusyError",
    "ConflictError",
    "DeniedError",
    "IntegrityError",
    "LockedError",
    "MemoriesError",
    "NotFoundError",
    "ProtocolError",
    "UnauthorizedError",
    "UnavailableError",
    "UsageError",
    "error_for_code",
]


class MemoriesError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(MemoriesError):
    code = "invalid_input"
    exit_code = 2


class ProtocolError(UsageError):
    code = "protocol"


class NotFoundError(MemoriesError):
    code = "not_found"


class ConflictError(MemoriesError):
    code = "conflict"


class BusyError(MemoriesError):
    code = "busy"


class UnavailableError(MemoriesError):
    code = "unavailable"


class LockedError(MemoriesError):
    code = "locked"
    exit_code = 3


class DeniedError(MemoriesError):
    code = "denied"
    exit_code = 3


#: The one text an unauthorized client ever reads: it says nothing about why the token failed.
UNAUTHORIZED_MESSAGE = (
    "unauthorized: the grant token is missing, wrong, revoked or expired; "
    "create a new grant with `memories grant create`"
)


class UnauthorizedError(MemoriesError):
    """A grant-authenticated client's token does not (or no longer does) name a live grant.

    The message is always :data:`UNAUTHORIZED_MESSAGE`, whatever the reason, so a client
    cannot tell a wrong token from a revoked or expired one.
    """

    code = "unauthorized"
    exit_code = 3

    def __init__(self, message: str = UNAUTHORIZED_MESSAGE) -> None:
        del message  # fixed text: never details, not even the daemon's
        super().__init__(UNAUTHORIZED_MESSAGE)


class IntegrityError(MemoriesError):
    """One opaque error for every failed decryption or verification."""

    code = "integrity"


_BY_CODE: dict[str, type[MemoriesError]] = {
    cls.code: cls
    for cls in (
        MemoriesError,
        UsageError,
        ProtocolError,
        NotFoundError,
        ConflictError,
        BusyError,
        UnavailableError,
        LockedError,
        DeniedError,
        UnauthorizedError,
        IntegrityError,
    )
}


def error_for_code(code: str, message: str) -> MemoriesError:
    """Rebuild the error a peer reported on the wire; unknown codes become ``MemoriesError``."""
    return _BY_CODE.get(code, MemoriesError)(message)
