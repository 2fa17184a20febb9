"""Recall: finding journal events by meaning, and digesting them for a goal.

Layout:

- :mod:`~urchin.recall.semantic`: TF-IDF ranking (no dependencies), or an
  OpenAI-compatible embeddings endpoint when one is configured; the HTTP helper.
- :mod:`~urchin.recall.reflect`: reflection digests (counts, decisions, open
  threads, relevant events) and an optional chat-endpoint summary.

Neither module is imported at MCP start-up; the first tool that needs one loads it.
"""

from __future__ import annotations

from urchin.recall.reflect import Reflection, reflect, reflection_event
from urchin.recall.semantic import event_text, rank

__all__ = ["Reflection", "event_text", "rank", "reflect", "reflection_event"]
