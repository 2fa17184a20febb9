"""Work a request leaves to run outside the service lock (model calls, network).

A handler whose request needs slow work prepares it under the service lock (authorized,
sources selected, intent filed) and leaves a :class:`Deferred` in ``Core.deferred``. The
service then, with no lock held, waits until the request's intents are durable, runs
:meth:`Deferred.work`, takes the lock again, checks that no lock happened in between (the
unlock generation), authorizes the request again (grant, role, lock state) and calls
:meth:`Deferred.finish`, which re-checks what the work depended on (the source revision
stamps) before it builds the response. A failure of the work is passed to
:meth:`Deferred.failed` under the lock, so it can be audited, and then raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memories.errors import MemoriesError
from memories.service.access import Access

__all__ = ["Deferred"]

T = TypeVar("T")


@dataclass(frozen=True)
class Deferred(Generic[T]):
    """Slow work and the two steps that close it under the service lock."""

    #: Runs with no lock held; raises ``MemoriesError`` subclasses only.
    work: Callable[[], T]
    #: Runs under the lock after re-authorization; returns the response.
    finish: Callable[[T, Access], dict[str, Any]]
    #: Runs under the lock when ``work`` failed (audit); must not raise.
    failed: Callable[[MemoriesError], None]
