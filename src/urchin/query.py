"""Reading answers out of the journal: recent events and case-insensitive text search.

These scan the JSONL linearly. The fields searched are content, title, tags and
workspace; answers come newest first.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from urchin.event import Event
from urchin.journal import Journal, JournalEntry

__all__ = ["EventFilter", "QueryResult", "recent", "search", "text_matches"]


@dataclass(frozen=True, slots=True)
class EventFilter:
    source: str | None = None
    hours: float | None = None
    text: str | None = None
    workspace_prefix: str | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def since(self) -> datetime | None:
        return None if self.hours is None else self.now - timedelta(hours=self.hours)

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


def _raw_prefilter(text: str | None) -> bytes | None:
    """Bytes every matching line must contain, when that can be known without decoding.

    JSON escapes quotes, backslashes and control characters, and other writers may
    escape non-ASCII, so only plain printable ASCII needles qualify.
    """
    if not text or not text.isascii() or not text.isprintable() or '"' in text or "\\" in text:
        return None
    return text.lower().encode("ascii")


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

    top = heapq.nlargest(limit, matching(), key=lambda e: (e.event.timestamp, e.offset))
    return [entry.event for entry in top], matched


def recent(
    journal: Journal, limit: int = 20, source: str | None = None, hours: float | None = None
) -> QueryResult:
    """The newest ``limit`` events, optionally from one source and within ``hours``."""
    scan = journal.scan()
    events, matched = _newest(scan, EventFilter(source=source, hours=hours), limit)
    return QueryResult(events, matched, scan.stats.malformed, scan.stats.torn_tail)


def search(
    journal: Journal,
    text: str,
    limit: int = 20,
    source: str | None = None,
    hours: float | None = None,
) -> QueryResult:
    """Events whose content, title, tags or workspace contain ``text`` (any case), newest first."""
    scan = journal.scan()
    scan.raw_filter = _raw_prefilter(text)
    flt = EventFilter(source=source, hours=hours, text=text)
    events, matched = _newest(scan, flt, limit)
    return QueryResult(events, matched, scan.stats.malformed, scan.stats.torn_tail)
