"""Collectors: read-only pulls from shell history, git and the agents' own logs.

Layout:

- :mod:`~urchin.collectors.base`: the Collector protocol, checkpoints, one run's
  batching and emission through the Recorder.
- :mod:`~urchin.collectors.tail`: byte-offset file tailing with replacement detection.
- :mod:`~urchin.collectors.sqlite`: reading databases other programs keep writing.
- :mod:`~urchin.collectors.transcript`: the kit every agent collector is built on
  (typed field access, slash commands, clipping, JSONL tailing from a checkpoint).
- one module per source: ``shell``, ``git``, ``claude``, ``codex`` (with
  ``codex_fields``), ``copilot``, ``gemini``, ``opencode``, ``local_model``.
- :mod:`~urchin.collectors.registry`: the built-in list, as configured.
"""

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
