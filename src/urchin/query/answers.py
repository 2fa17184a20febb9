"""Answers from the SQLite index, with the linear scan as the fallback.

:func:`recent`, :func:`search`, :func:`workspace_events`, :func:`count` and
:func:`last_event` answer from the index beside the journal (:mod:`urchin.query.index`),
refreshing it first. When the index cannot be used (a read-only folder, a database
another process keeps locked) they answer from a linear scan of the journal instead
(:mod:`urchin.query.linear`), which gives the same result, only slower.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from urchin.errors import IndexUnavailableError
from urchin.event import Event
from urchin.journal import Journal
from urchin.query.filters import QueryResult
from urchin.query.index import JournalIndex
from urchin.query.index import answer as index_answer
from urchin.query.linear import (
    linear_count,
    linear_last_event,
    linear_recent,
    linear_search,
    linear_workspace_events,
)

__all__ = ["count", "last_event", "recent", "search", "workspace_events"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def _indexed(journal: Journal, ask: Callable[[JournalIndex], T], fallback: Callable[[], T]) -> T:
    try:
        return index_answer(journal, ask)
    except IndexUnavailableError as exc:
        log.debug("index not usable (%s); scanning the journal instead", exc.message)
        return fallback()


def recent(
    journal: Journal,
    limit: int = 20,
    source: str | None = None,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """The newest ``limit`` events, optionally from one source and within ``hours`` of now.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    return _indexed(
        journal,
        lambda ix: ix.recent(limit, source, hours, now=now),
        lambda: linear_recent(journal, limit, source, hours, now=now),
    )


def search(
    journal: Journal,
    text: str,
    limit: int = 20,
    source: str | None = None,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """Events whose content, title, tags or workspace contain ``text`` (any case), newest first.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    return _indexed(
        journal,
        lambda ix: ix.search(text, limit, source, hours, now=now),
        lambda: linear_search(journal, text, limit, source, hours, now=now),
    )


def workspace_events(
    journal: Journal,
    path_prefix: str,
    limit: int = 20,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """The newest events whose workspace starts with ``path_prefix`` (exact case).

    An empty prefix matches every event, including those without a workspace.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    return _indexed(
        journal,
        lambda ix: ix.workspace_events(path_prefix, limit, hours, now=now),
        lambda: linear_workspace_events(journal, path_prefix, limit, hours, now=now),
    )


def count(journal: Journal) -> int:
    """How many valid events the journal holds.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    return _indexed(
        journal,
        lambda ix: ix.count(),
        lambda: linear_count(journal),
    )


def last_event(journal: Journal) -> Event | None:
    """The newest event (the later line on a tie), or None for an empty journal.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    return _indexed(
        journal,
        lambda ix: ix.last_event(),
        lambda: linear_last_event(journal),
    )
