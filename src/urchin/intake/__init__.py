"""The HTTP intake: anything on this machine can push events into the journal.

Layout:

- :mod:`~urchin.intake.models`: the wire models (what the OpenAPI document promises)
  and the size limits.
- :mod:`~urchin.intake.app`: the ASGI app: the spec's four gates, the read endpoints.
- :mod:`~urchin.intake.commit`: group commit: many requests, one write, one fsync.
- :mod:`~urchin.intake.server`: uvicorn on loopback, signals, the access log.
"""

from __future__ import annotations

from urchin.intake.app import Intake, create_app, event_from_body
from urchin.intake.commit import GroupCommitter
from urchin.intake.models import MAX_BATCH_BODY_BYTES, MAX_BATCH_EVENTS, MAX_BODY_BYTES
from urchin.intake.server import is_loopback_host, serve

__all__ = [
    "MAX_BATCH_BODY_BYTES",
    "MAX_BATCH_EVENTS",
    "MAX_BODY_BYTES",
    "GroupCommitter",
    "Intake",
    "create_app",
    "event_from_body",
    "is_loopback_host",
    "serve",
]
