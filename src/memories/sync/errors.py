"""Errors of synchronization. They keep their parent's wire code (as ``memories.store.errors``
does), so a client sees the parent class with this module's message.

::

    UnavailableError
    └── TransportError       the storage could not be reached or refused an operation
        └── ObjectMissing    the storage does not (yet) hold the object asked for
"""

from __future__ import annotations

from memories.errors import UnavailableError

__all__ = ["ObjectMissing", "TransportError"]


class TransportError(UnavailableError):
    """The storage could not be reached, or refused an operation. Worth retrying later.

    Messages name the operation and the transport's description (a path or an rclone remote
    name), never object contents, credentials or a child process's raw output.
    """


class ObjectMissing(TransportError):
    """The storage does not hold the object asked for (yet: another device may still be
    uploading it, or a sync client may still be copying it)."""
