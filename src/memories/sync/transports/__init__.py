"""Where objects travel: one small protocol (put/get/list, never delete) and its implementations.

- ``base``    the protocol, object names, the content check every reader applies
- ``memory``  in memory (tests; several devices in one process share one)
- ``folder``  any directory, written by temp file + rename
- ``rclone``  every backend rclone reaches, through the ``rclone`` binary
"""

from __future__ import annotations

from memories.sync.transports.base import (
    AREAS,
    MAX_OBJECT_BYTES,
    Transport,
    check_name,
    content_matches,
    is_name,
)
from memories.sync.transports.folder import FolderTransport
from memories.sync.transports.memory import MemoryTransport
from memories.sync.transports.rclone import RcloneTransport, check_remote

__all__ = [
    "AREAS",
    "MAX_OBJECT_BYTES",
    "FolderTransport",
    "MemoryTransport",
    "RcloneTransport",
    "Transport",
    "check_name",
    "check_remote",
    "content_matches",
    "is_name",
    "open_transport",
]


def open_transport(kind: str, location: str) -> Transport:
    """The transport for a stored sync target. Raises ``UsageError`` for an unknown kind or a
    malformed location, ``TransportError`` when rclone is not installed."""
    from pathlib import Path

    from memories.errors import UsageError

    if kind == "folder":
        return FolderTransport(Path(location))
    if kind == "rclone":
        return RcloneTransport(location)
    raise UsageError("a sync target is a folder or an rclone remote")
