"""``urchin serve``: the HTTP intake and a periodic collection tick in one process.

The collection loop runs in a thread beside the server. Each tick runs every
collector once; on shutdown the collector in progress finishes (its appends and
its checkpoint), the rest are skipped, and the journal is flushed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from urchin.collectors.base import CheckpointStore, CollectResult, run_all
from urchin.collectors.registry import build_collectors
from urchin.config import Settings
from urchin.errors import UrchinError
from urchin.identity import Identity
from urchin.recorder import Recorder

__all__ = ["CollectionLoop", "serve"]

log = logging.getLogger(__name__)


class CollectionLoop:
    """Runs every collector each ``interval`` seconds until stopped."""

    def __init__(
        self,
        settings: Settings,
        interval: float,
        *,
        names: Sequence[str] = (),
        repos: Sequence[Path] = (),
    ) -> None:
        self.settings = settings
        self.interval = interval
        self.names = tuple(names)
        self.repos = tuple(repos)
        self.ticks = 0

    def tick(self, stop: threading.Event | None = None) -> list[CollectResult]:
        """Run the collectors once. Problems are logged, never raised."""
        started = time.monotonic()
        try:
            collectors = build_collectors(self.settings, self.names, repos=self.repos)
            recorder = Recorder.from_settings(self.settings, durable=False)
        except UrchinError as exc:
            log.error("collection skipped: %s", exc.message)
            return []
        try:
            results = run_all(
                collectors,
                recorder,
                Identity.resolve(),
                CheckpointStore(self.settings.data_dir),
                stop=stop,
            )
            recorder.journal.sync()
        finally:
            recorder.journal.close()
        self.ticks += 1
        new = sum(result.new for result in results)
        for result in results:
            for message in result.errors:
                log.warning("collector %s: %s", result.name, message)
        log.info(
            "collection tick %d: %d new event(s) in %.1fs",
            self.ticks,
            new,
            time.monotonic() - started,
        )
        return results

    def run(self, stop: threading.Event) -> None:
        """Tick now and then every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            self.tick(stop)
            stop.wait(self.interval)


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    interval: float | None = None,
    names: Sequence[str] = (),
    repos: Sequence[Path] = (),
    log_level: str = "info",
) -> None:
    """Serve the intake and collect every ``interval`` seconds until SIGINT/SIGTERM.

    Raises:
        UsageError: ``host`` cannot be resolved, or a collector name is unknown.
        UrchinError: the address cannot be bound.
    """
    # Imported here: the web stack is only needed by the commands that serve.
    from urchin.intake.server import serve as serve_intake

    build_collectors(settings, names, repos=repos)  # fail fast on unknown names
    loop = CollectionLoop(
        settings,
        settings.collect_interval if interval is None else interval,
        names=names,
        repos=repos,
    )
    serve_intake(settings, host, port, log_level=log_level, background=loop.run)
