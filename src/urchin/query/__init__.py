"""Reading answers out of the journal: recent events, text search, workspace history.

Layout:

- :mod:`~urchin.query.filters`: the leaf: time windows, the event filter, the text
  match and :class:`QueryResult`; imports nothing else of this package.
- :mod:`~urchin.query.linear`: every answer by scanning the whole journal (the
  fallback, and the baseline the index must agree with).
- :mod:`~urchin.query.index`: ``index.db``, the SQLite projection beside the journal:
  schema, catching up, connections.
- :mod:`~urchin.query.build`: journal bytes into index rows (the build's hot loop).
- :mod:`~urchin.query.plans`: SQL filters and the plans of an indexed text search.
- :mod:`~urchin.query.answers`: the public answers, from the index with the linear
  scan as fallback.
"""

from __future__ import annotations

from urchin.query.answers import count, last_event, recent, search, workspace_events
from urchin.query.filters import EventFilter, QueryResult, text_matches, window_start
from urchin.query.linear import (
    linear_count,
    linear_last_event,
    linear_recent,
    linear_search,
    linear_workspace_events,
)

__all__ = [
    "EventFilter",
    "QueryResult",
    "count",
    "last_event",
    "linear_count",
    "linear_last_event",
    "linear_recent",
    "linear_search",
    "linear_workspace_events",
    "recent",
    "search",
    "text_matches",
    "window_start",
    "workspace_events",
]
