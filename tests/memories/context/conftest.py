"""A real daemon (the CLI fixtures) and a real urchin journal written through urchin's own
recorder."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

# The console-script fixtures (a real daemon in the test's home).
from tests.memories.cli.conftest import memories, store  # noqa: F401
from urchin.config import load_settings as urchin_settings
from urchin.event import Event
from urchin.recorder import Recorder

Record = Callable[..., Event]


@pytest.fixture
def record() -> Record:
    """Record one event through urchin's write path (redaction included); returns it."""
    recorder = Recorder.from_settings(urchin_settings())

    def write(
        content: str,
        *,
        workspace: Path | str | None,
        at: datetime,
        source: str = "claude",
        kind: str = "conversation",
        title: str | None = None,
    ) -> Event:
        event = Event.create(
            content,
            source,
            kind,
            timestamp=at,
            workspace=None if workspace is None else str(workspace),
            title=title,
        )
        recorder.record(event)
        return event

    return write
