"""What a query asks for: the time window, the event filter, the text match, the answer shape.

The leaf of :mod:`urchin.query`: the linear scan, the index and its search plans all
build on it, and it imports none of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from urchin.errors import UsageError
from urchin.event import Event

__all__ = ["EventFilter", "QueryResult", "text_matches", "window_start"]

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
