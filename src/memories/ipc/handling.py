"""What the IPC server calls to answer requests: a batch handler, or a plain function.

The server reads the requests that arrived together on all its connections and hands them to
a :class:`BatchHandler` at once: ``prepare`` answers what it can right away, ``settle`` runs
once for the batch (the daemon makes every read intent of the batch durable there, with one
commit), and then each :class:`Prepared` gives its response. One whose ``blocks`` is true
(it waits on models, the network or another process) finishes in a thread of its own, so it
holds up neither the server nor the other connections.

A plain :data:`Handler` function is served through :func:`per_request`: every request is
answered in a thread of its own, as a blocking function may need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memories.ipc.peer import Peer

__all__ = ["BatchHandler", "Handler", "Prepared", "per_request"]

Handler = Callable[[dict[str, Any], Peer], dict[str, Any]]


class Prepared(Protocol):
    """One request a batch handler prepared."""

    @property
    def blocks(self) -> bool:
        """Whether :meth:`finish` may block (it then runs in a thread of its own)."""
        ...

    def finish(self) -> dict[str, Any]:
        """The response; raises :class:`~memories.errors.MemoriesError` for an error answer."""
        ...


@runtime_checkable
class BatchHandler(Protocol):
    """Answers the requests that arrived together; see the module docstring."""

    def prepare(self, requests: Sequence[tuple[dict[str, Any], Peer]]) -> Sequence[Prepared]:
        """One :class:`Prepared` per request, in order; never raises."""
        ...

    def settle(self, prepared: Sequence[Prepared]) -> None:
        """Runs once for a batch, after ``prepare`` and before any ``finish``; never raises."""
        ...


@dataclass(frozen=True)
class _Call:
    handler: Handler
    request: dict[str, Any]
    peer: Peer
    blocks = True

    def finish(self) -> dict[str, Any]:
        return self.handler(self.request, self.peer)


class _PerRequest:
    def __init__(self, handler: Handler) -> None:
        self._handler = handler

    def prepare(self, requests: Sequence[tuple[dict[str, Any], Peer]]) -> Sequence[Prepared]:
        return [_Call(self._handler, request, peer) for request, peer in requests]

    def settle(self, prepared: Sequence[Prepared]) -> None:
        return None


def per_request(handler: Handler) -> BatchHandler:
    """Serve ``handler(request, peer)`` for each request, each in a thread of its own."""
    return _PerRequest(handler)
