"""Who is at the other end of a connection, as the kernel reports it."""

from __future__ import annotations

import errno
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Peer", "peer_of"]

# Darwin/BSD: getsockopt(SOL_LOCAL, LOCAL_PEERCRED) fills a struct xucred; LOCAL_PEERPID the pid.
_SOL_LOCAL: Final = 0
_LOCAL_PEERCRED: Final = 1
_LOCAL_PEERPID: Final = 2
_XUCRED = struct.Struct("=IIh2x16I")
_UCRED = struct.Struct("3i")


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as the kernel reports it.

    ``principal`` is what the connection authenticated as with ``grant_authenticate`` (a grant
    id); ``None`` for a connection that relies on the operating system's word alone.
    """

    pid: int
    uid: int
    gid: int
    principal: str | None = None


def peer_of(sock: Any) -> Peer:
    """The credentials of the process connected to the Unix socket ``sock``.

    Raises:
        OSError: the kernel does not report peer credentials for this socket or platform.
    """
    if hasattr(socket, "SO_PEERCRED"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        pid, uid, gid = _UCRED.unpack(raw)
        return Peer(pid=pid, uid=uid, gid=gid)
    if sys.platform == "darwin":
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED.size)
        fields = _XUCRED.unpack(raw)
        uid, ngroups, groups = fields[1], fields[2], fields[3:]
        pid = struct.unpack("=i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))[0]
        return Peer(pid=pid, uid=uid, gid=groups[0] if ngroups > 0 else -1)
    raise OSError(errno.ENOTSUP, "peer credentials are not available on this platform")
