"""Who is asking, and whether they are elevated.

A :class:`Caller` is identified by an *elevation namespace*. Local CLI callers get
``cli:{session}@{start}``, where the session is the parent process of the connecting command
(the shell that ran it) named by its pid and start time, so successive one-shot commands from
one terminal share an elevation the way sudo's per-terminal tickets do, while another terminal
(or a later process given a recycled pid) does not. Remote transports use the fixed
namespaces ``ws:remote`` and ``relay:remote``: they are separate keys in the :class:`Elevation`
table and never see an elevation granted to a local namespace, nor the other way round.

Elevations expire on a monotonic clock and are all dropped when the store locks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memories.errors import UsageError
from memories.processes import process_start_time

__all__ = [
    "RELAY_REMOTE",
    "REMOTE_NAMESPACES",
    "WS_REMOTE",
    "Caller",
    "Elevation",
    "local_cli_caller",
    "session_of",
]

REMOTE_NAMESPACES: Final = frozenset({"ws:remote", "relay:remote"})
_MAX_NAMESPACE = 100


@dataclass(frozen=True)
class Caller:
    """The party a request comes from, named by its elevation namespace.

    Raises:
        UsageError: the namespace is empty or too long, or ``remote`` does not match whether
            the namespace is one of :data:`REMOTE_NAMESPACES`.
    """

    namespace: str
    remote: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.namespace, str) or not 0 < len(self.namespace) <= _MAX_NAMESPACE:
            raise UsageError("a caller namespace is 1 to 100 characters")
        if (self.namespace in REMOTE_NAMESPACES) != self.remote:
            raise UsageError("remote callers use the ws:remote or relay:remote namespace")


WS_REMOTE: Final = Caller("ws:remote", remote=True)
RELAY_REMOTE: Final = Caller("relay:remote", remote=True)


def session_of(pid: int, proc: Path = Path("/proc")) -> int:
    """The session a local process belongs to: its parent's pid, or ``pid`` itself.

    The parent is read from ``/proc/<pid>/stat``. Without /proc (macOS), when the process is
    gone, or when its parent is pid 1 or 0 (which every orphaned or daemonized process shares),
    the process's own pid is the session, so nothing is shared.
    """
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
        # The command name in parentheses may itself hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        parent = int(fields[1])
    except (OSError, ValueError, IndexError):
        return pid
    return parent if parent > 1 else pid


def local_cli_caller(peer_pid: int) -> Caller:
    """The caller for a local IPC connection from process ``peer_pid``.

    The namespace is ``cli:{session}@{start}``: the session's pid and its start time in clock
    ticks since boot, so a process that is later given the same pid shares nothing with the
    one that held it. Where the start time cannot be read (no /proc, as on macOS) it is
    ``cli:{session}``, and there the session is always the connecting process itself.
    """
    session = session_of(peer_pid)
    started = process_start_time(session)
    return Caller(f"cli:{session}" if started is None else f"cli:{session}@{started}")


class Elevation:
    """Elevation deadlines by namespace, on a monotonic ``clock``. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._guard = threading.Lock()

    def grant(self, namespace: str, seconds: float) -> float:
        """Elevate ``namespace`` for ``seconds`` from now; returns the seconds granted."""
        if seconds <= 0:
            raise UsageError("an elevation must last a positive time")
        with self._guard:
            self._until[namespace] = self._clock() + seconds
        return seconds

    def seconds_left(self, namespace: str) -> float:
        """How long ``namespace`` stays elevated; 0 when it is not."""
        with self._guard:
            until = self._until.get(namespace)
            if until is None:
                return 0.0
            left = until - self._clock()
            if left <= 0:
                del self._until[namespace]
                return 0.0
            return left

    def active(self, namespace: str) -> bool:
        """Whether ``namespace`` is elevated right now."""
        return self.seconds_left(namespace) > 0

    def revoke(self, namespace: str) -> None:
        with self._guard:
            self._until.pop(namespace, None)

    def clear(self) -> None:
        """End every elevation (the store locked)."""
        with self._guard:
            self._until.clear()

    def prune(self) -> None:
        """Forget expired entries."""
        with self._guard:
            now = self._clock()
            for namespace in [n for n, until in self._until.items() if until <= now]:
                del self._until[namespace]
