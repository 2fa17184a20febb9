"""The last day of urchin activity in a workspace, read through urchin's public query API.

This is where memories first reads urchin: the journal's path comes from urchin's own settings
(``URCHIN_JOURNAL_PATH``, its config file, the XDG default) and the events from
:func:`urchin.query.workspace_events`, which answers from urchin's index and falls back to a
scan of the journal by itself. Only this module and :mod:`~memories.context.block` (urchin's
redactor) import urchin, so a move there is a small fix here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from urchin.config import load_settings as urchin_settings
from urchin.errors import UrchinError
from urchin.event import Event
from urchin.journal import Journal
from urchin.query import workspace_events

__all__ = ["ActivityItem", "ActivityUnavailableError", "WorkspaceActivity", "last_day_activity"]

#: How far back from the workspace's newest event "the last day" reaches.
WINDOW = timedelta(hours=24)
#: Events read from the index per workspace prefix; the block shows far fewer.
_FETCH = 200


class ActivityUnavailableError(Exception):
    """urchin's settings or journal cannot be read now; ``message`` says why, without content."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class ActivityItem:
    """One event as the block shows it: when, from where, what kind, a one-line summary."""

    timestamp: datetime
    source: str
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class WorkspaceActivity:
    """The workspace's events in the 24 hours up to its newest one, newest first, and how many
    events that window holds in all (``items`` may be cut to ``limit``)."""

    items: tuple[ActivityItem, ...]
    total: int


def _inside(workspace: str | None, roots: Sequence[str]) -> bool:
    if not workspace:
        return False
    return any(workspace == root or workspace.startswith(root.rstrip("/") + "/") for root in roots)


def _summary(event: Event) -> str:
    if event.title and event.title.strip():
        return event.title.strip()
    for line in event.content.splitlines():
        if line.strip():
            return line.strip()
    return ""


def last_day_activity(roots: Sequence[Path], *, limit: int = 20) -> WorkspaceActivity | None:
    """The last day of activity recorded under any of ``roots`` (the same folder spelled with
    and without links resolved), or None when urchin has no journal yet.

    Raises:
        ActivityUnavailableError: urchin's configuration or journal cannot be read.
    """
    try:
        settings = urchin_settings()
    except UrchinError as exc:
        raise ActivityUnavailableError("urchin's configuration cannot be read") from exc
    journal_path = settings.journal_path
    if not journal_path.is_file():
        return None
    prefixes = sorted({str(root) for root in roots})
    journal = Journal(journal_path)
    seen: dict[str, Event] = {}
    try:
        for prefix in prefixes:
            result = workspace_events(journal, prefix, limit=_FETCH)
            for event in result.events:
                if _inside(event.workspace, prefixes):
                    seen[str(event.id)] = event
    except UrchinError as exc:
        raise ActivityUnavailableError("urchin's journal cannot be read") from exc
    except OSError as exc:
        raise ActivityUnavailableError("urchin's journal cannot be read") from exc
    if not seen:
        return WorkspaceActivity(items=(), total=0)
    # Newest first; ties broken by id so the same journal always gives the same block.
    events = sorted(seen.values(), key=lambda e: (e.timestamp, str(e.id)), reverse=True)
    start = events[0].timestamp - WINDOW
    window = [event for event in events if event.timestamp >= start]
    items = tuple(
        ActivityItem(
            timestamp=event.timestamp,
            source=event.source,
            kind=str(event.kind),
            text=_summary(event),
        )
        for event in window[:limit]
    )
    return WorkspaceActivity(items=items, total=len(window))
