"""The session-start context block (``memories context``).

Layout:

- :mod:`~memories.context.workspace`: which workspace a folder belongs to; the opt-out.
- :mod:`~memories.context.relevant`: which memories the daemon's answers put in the block.
- :mod:`~memories.context.activity`: the last day of urchin activity there (the one module
  that imports urchin's query API).
- :mod:`~memories.context.block`: the bounded, escaped, deterministic text.

The daemon is reached by the command (``memories.cli.context_cmd``) over the usual request
path; nothing here opens the store.
"""

from __future__ import annotations

from memories.context.activity import (
    ActivityItem,
    ActivityUnavailableError,
    WorkspaceActivity,
    last_day_activity,
)
from memories.context.block import DEFAULT_MAX_CHARS, MIN_MAX_CHARS, Block, clean, render
from memories.context.relevant import MemoryItem, select_memories
from memories.context.workspace import (
    OPT_OUT_ENV,
    OPT_OUT_FILE,
    Workspace,
    opted_out,
    resolve_workspace,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MIN_MAX_CHARS",
    "OPT_OUT_ENV",
    "OPT_OUT_FILE",
    "ActivityItem",
    "ActivityUnavailableError",
    "Block",
    "MemoryItem",
    "Workspace",
    "WorkspaceActivity",
    "clean",
    "last_day_activity",
    "opted_out",
    "render",
    "resolve_workspace",
    "select_memories",
]
