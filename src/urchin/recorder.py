"""The one write path every front end uses: CLI, intake, MCP and collectors.

It applies the rules every event must pass before it reaches the journal, in
one place: ephemeral mode drops it, then it is appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from urchin.ephemeral import Ephemeral
from urchin.event import Event
from urchin.journal import Journal

__all__ = ["Outcome", "Recorder"]


class Outcome(StrEnum):
    OK = "ok"
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True)
class Recorder:
    journal: Journal
    ephemeral: Ephemeral

    def prepare(self, event: Event) -> Event:
        """The event exactly as it will be written."""
        return event

    def record(self, event: Event) -> Outcome:
        """Append one event unless ephemeral mode is on.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        return self.record_many([event])

    def record_many(self, events: Sequence[Event]) -> Outcome:
        """Append events with one write, or drop them all in ephemeral mode.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        if self.ephemeral.is_active():
            return Outcome.DROPPED
        self.journal.append_many(self.prepare(event) for event in events)
        return Outcome.OK
