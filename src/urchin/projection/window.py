"""Which events a projection covers: a local day, or the last hours up to now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path

from urchin.errors import UsageError
from urchin.event import Event
from urchin.journal import Journal

__all__ = ["EventSelection", "Window", "select_events"]


@dataclass(frozen=True, slots=True)
class Window:
    """Which events a note summarises, and which day's note receives them.

    With ``since`` unset the window is the local calendar day ``day``; otherwise
    it is every event at or after ``since`` (UTC), written to the note of ``day``.
    ``tz`` is the local time zone (``None``: the system's).
    """

    day: date
    since: datetime | None = None
    tz: tzinfo | None = None

    @classmethod
    def for_day(cls, day: date, tz: tzinfo | None = None) -> Window:
        """The events whose local timestamp falls on ``day``."""
        return cls(day, None, tz)

    @classmethod
    def last_hours(
        cls, hours: float, *, now: datetime | None = None, tz: tzinfo | None = None
    ) -> Window:
        """The last ``hours`` hours, projected into today's (local) note.

        Raises:
            UsageError: ``hours`` is not a positive number of hours that fits in a date.
        """
        if not hours > 0:
            raise UsageError("hours must be a positive number")
        current = (now or datetime.now(UTC)).astimezone(UTC)
        try:
            since = current - timedelta(hours=hours)
        except OverflowError:
            raise UsageError("hours is too large") from None
        return cls(current.astimezone(tz).date(), since, tz)

    def contains(self, moment: datetime) -> bool:
        if self.since is not None:
            return moment >= self.since
        return moment.astimezone(self.tz).date() == self.day


@dataclass(frozen=True, slots=True)
class EventSelection:
    """The events in a window, oldest first, and what the journal scan skipped."""

    events: list[Event]
    malformed: int
    torn_tail: bool


def select_events(journal_path: Path, window: Window) -> EventSelection:
    """Scan the journal for the events in ``window``, oldest first (journal order on ties).

    A missing journal has no events.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    scan = Journal(journal_path).scan()
    events = [entry.event for entry in scan if window.contains(entry.event.timestamp)]
    events.sort(key=lambda event: event.timestamp)
    return EventSelection(events, scan.stats.malformed, scan.stats.torn_tail)
