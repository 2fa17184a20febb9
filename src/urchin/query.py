"""Reading answers out of the journal: recent events, text search, workspace history.

The fields searched are content, title, tags and workspace, as a case-insensitive
substring match; answers come newest first (ties: later in the file first).

:func:`recent`, :func:`search`, :func:`workspace_events`, :func:`count` and
:func:`last_event` answer from the SQLite index beside the journal
(:mod:`urchin.index`), refreshing it first. When the index cannot be used (a
read-only folder, a database another process keeps locked) they answer from a
linear scan of the journal instead, which gives the same result, only slower.
The ``linear_*`` functions are that scan; they are also the benchmark baseline.
"""

from __future__ import annotations

import heapq
import logging
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from urchin.errors import UsageError
from urchin.event import Event
from urchin.journal import Journal, JournalEntry

if TYPE_CHECKING:
    from urchin.index import JournalIndex

__all__ = [
    "EventFilter",
    "QueryResult",
    "count",
    "last_event",
    "linear_count",
    "linear_last_event",
    "linear_recent",
    "linear_search",
    "linear_workspace_events",
    "recent",
    "search",
    "text_matches",
    "window_start",
    "workspace_events",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# The latest moment a datetime can hold: a window starting there matches nothing.
_END_OF_TIME = datetime.max.replace(tzinfo=UTC)


def window_start(now: datetime, hours: float | None) -> datetime | None:
    """The start of a window of ``hours`` ending at ``now``; None means no lower bound.

    A window too long for a datetime covers everything; a negative one that far
    ahead covers nothing.

    Raises:
        UsageError: ``hours`` is not a number (NaN).
    """
    if hours is None:
        return None
    if math.isnan(hours):
        raise UsageError("hours must be a number")
    try:
        return now - timedelta(hours=hours)
    except OverflowError:
        return None if hours > 0 else _END_OF_TIME


@dataclass(frozen=True, slots=True)
class EventFilter:
    source: str | None = None
    hours: float | None = None
    text: str | None = None
    workspace_prefix: str | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    since: datetime | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Raises UsageError when ``hours`` is NaN."""
        # Computed once: matches() runs for every line of the journal.
        object.__setattr__(self, "since", window_start(self.now, self.hours))

    def matches(self, event: Event) -> bool:
        if self.source is not None and event.source != self.source:
            return False
        since = self.since
        if since is not None and event.timestamp < since:
            return False
        if self.workspace_prefix is not None and not (event.workspace or "").startswith(
            self.workspace_prefix
        ):
            return False
        return self.text is None or text_matches(event, self.text.lower())


def text_matches(event: Event, needle_lower: str) -> bool:
    """Case-insensitive substring match over content, title, tags and workspace."""
    if needle_lower in event.content.lower():
        return True
    if event.title and needle_lower in event.title.lower():
        return True
    if event.workspace and needle_lower in event.workspace.lower():
        return True
    return any(needle_lower in tag.lower() for tag in event.tags)


@dataclass(frozen=True, slots=True)
class QueryResult:
    events: list[Event]
    matched: int
    malformed: int
    torn_tail: bool


# -- answers from the index, with the linear scan as fallback ----------------------------


def _indexed(journal: Journal, ask: Callable[[JournalIndex], T], fallback: Callable[[], T]) -> T:
    # Imported here: urchin.index builds on this module (QueryResult, text_matches).
    from urchin import index

    try:
        return index.answer(journal, ask)
    except index.IndexUnavailableError as exc:
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


# -- the linear scan -----------------------------------------------------------------------

# ASCII characters a matching line may not hold as plain bytes: 'i' and 'k' can be
# the lower case of U+0130 and U+212A; the others are ones some JSON writers escape
# as \uXXXX or \/. Quotes, backslashes and controls are always escaped.
_NOT_RAW = re.compile(r"""[^\x20-\x7e]|[ik/<>&'"\\]""")


def _raw_prefilter(text: str | None) -> bytes | None:
    """Bytes every matching line must contain (after ASCII lower-casing), if any.

    The longest run of the lower-cased needle that can only come from the same
    plain ASCII bytes in the line; None when no such run exists.
    """
    if not text:
        return None
    runs = _NOT_RAW.split(text.lower())
    best = max(runs, key=len)
    return best.encode("ascii") if best else None


def _newest(
    entries: Iterable[JournalEntry], flt: EventFilter, limit: int
) -> tuple[list[Event], int]:
    matched = 0

    def matching() -> Iterable[JournalEntry]:
        nonlocal matched
        for entry in entries:
            if flt.matches(entry.event):
                matched += 1
                yield entry

    if limit <= 0:
        # nlargest(0, ...) would not read the journal at all; the count still matters.
        for _ in matching():
            pass
        return [], matched
    top = heapq.nlargest(limit, matching(), key=lambda e: (e.event.timestamp, e.offset))
    return [entry.event for entry in top], matched


def _filter(
    now: datetime | None,
    *,
    source: str | None = None,
    hours: float | None = None,
    text: str | None = None,
    workspace_prefix: str | None = None,
) -> EventFilter:
    return EventFilter(
        source=source,
        hours=hours,
        text=text,
        workspace_prefix=workspace_prefix,
        now=now or datetime.now(UTC),
    )


def linear_recent(
    journal: Journal,
    limit: int = 20,
    source: str | None = None,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """:func:`recent` by scanning the whole journal.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    flt = _filter(now, source=source, hours=hours)
    scan = journal.scan()
    events, matched = _newest(scan, flt, limit)
    return QueryResult(events, matched, scan.stats.malformed, scan.stats.torn_tail)


def linear_search(
    journal: Journal,
    text: str,
    limit: int = 20,
    source: str | None = None,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """:func:`search` by scanning the whole journal.

    Lines that cannot match are skipped before JSON decoding, so ``malformed``
    counts only the malformed lines that passed that byte filter.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    flt = _filter(now, source=source, hours=hours, text=text)
    scan = journal.scan()
    scan.raw_filter = _raw_prefilter(text)
    events, matched = _newest(scan, flt, limit)
    return QueryResult(events, matched, scan.stats.malformed, scan.stats.torn_tail)


def linear_workspace_events(
    journal: Journal,
    path_prefix: str,
    limit: int = 20,
    hours: float | None = None,
    *,
    now: datetime | None = None,
) -> QueryResult:
    """:func:`workspace_events` by scanning the whole journal.

    Raises:
        UsageError: ``hours`` is NaN.
        JournalReadError: the journal exists but cannot be read.
    """
    flt = _filter(now, hours=hours, workspace_prefix=path_prefix)
    scan = journal.scan()
    events, matched = _newest(scan, flt, limit)
    return QueryResult(events, matched, scan.stats.malformed, scan.stats.torn_tail)


def linear_count(journal: Journal) -> int:
    """:func:`count` by scanning the whole journal.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    scan = journal.scan()
    for _ in scan:
        pass
    return scan.stats.events


def linear_last_event(journal: Journal) -> Event | None:
    """:func:`last_event` by scanning the whole journal.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    events, _ = _newest(journal.scan(), EventFilter(), 1)
    return events[0] if events else None
