"""Running a collector the way `urchin collect` does, against a data folder of the test's."""

from __future__ import annotations

from pathlib import Path

from urchin.collectors.base import CheckpointStore, Collector, CollectResult, run_collector
from urchin.ephemeral import Ephemeral
from urchin.event import Event
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Recorder


def journal_path(data_dir: Path) -> Path:
    return data_dir / "journal" / "events.jsonl"


def run_once(
    collector: Collector, data_dir: Path, store: CheckpointStore | None = None
) -> CollectResult:
    """One collection run through the real write path (ephemeral check, redaction, journal)."""
    with Journal(journal_path(data_dir)) as journal:
        return run_collector(
            collector,
            Recorder(journal, Ephemeral(data_dir)),
            Identity.resolve(),
            store or CheckpointStore(data_dir),
        )


def journal_events(data_dir: Path) -> list[Event]:
    return [entry.event for entry in Journal(journal_path(data_dir)).scan()]
