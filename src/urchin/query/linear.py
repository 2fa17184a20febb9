"""The linear scan: every answer of :mod:`urchin.query` by reading the whole journal.

The fields searched are content, title, tags and workspace, as a case-insensitive
substring match; answers come newest first (ties: later in the file first). This is
what the index must agree with, the fallback when it cannot be used, and the
benchmark baseline.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from urchin.event import Event
from urchin.journal import Journal, JournalEntry
from urchin.query.filters import EventFilter, QueryResult

__all__ = [
    "linear_count",
    "linear_last_event",
    "linear_recent",
    "linear_search",
    "linear_workspace_events",
]

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
