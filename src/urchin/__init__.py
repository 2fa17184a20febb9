"""urchin: an append-only activity journal for people who work with AI coding agents."""

from urchin.event import Actor, Event, EventKind, OtherKind
from urchin.journal import Journal, JournalScan

__all__ = ["Actor", "Event", "EventKind", "Journal", "JournalScan", "OtherKind"]
__version__ = "0.1.0"
