"""Collectors: read-only pulls from shell history, git and the agents' own logs."""

from urchin.collectors.base import (
    CheckpointStore,
    Collector,
    CollectorRun,
    CollectResult,
    run_all,
    run_collector,
    stable_id,
)

__all__ = [
    "CheckpointStore",
    "CollectResult",
    "Collector",
    "CollectorRun",
    "run_all",
    "run_collector",
    "stable_id",
]
