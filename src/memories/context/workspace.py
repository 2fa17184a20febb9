"""Which workspace a context block is for, and whether the project opted out.

The workspace is the nearest folder at or above the one given that holds ``.git`` (a
repository's root, where agents usually start), else the folder itself. Its name (the folder's
base name) is what memories are searched and tagged by.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OPT_OUT_ENV", "OPT_OUT_FILE", "Workspace", "opted_out", "resolve_workspace"]

#: A file of this name in the workspace or any folder above it turns the block off there.
OPT_OUT_FILE = ".memories-no-context"
#: Set to anything but "" or "0" to turn the block off everywhere.
OPT_OUT_ENV = "MEMORIES_NO_CONTEXT"


@dataclass(frozen=True, slots=True)
class Workspace:
    """The workspace's root folder (absolute, links resolved) and its name."""

    root: Path
    name: str


def resolve_workspace(folder: Path) -> Workspace:
    """The workspace ``folder`` belongs to.

    Raises:
        OSError: ``folder`` does not exist or cannot be resolved.
    """
    start = folder.resolve(strict=True)
    root = start
    for candidate in (start, *start.parents):
        if os.path.lexists(candidate / ".git"):
            root = candidate
            break
    return Workspace(root=root, name=root.name or str(root))


def opted_out(folder: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether the block is turned off for ``folder`` (by the environment or an opt-out file
    in it or any folder above it). Never raises: an unreadable folder does not opt out."""
    env = os.environ if env is None else env
    if env.get(OPT_OUT_ENV, "") not in ("", "0"):
        return True
    try:
        start = folder.resolve()
    except OSError:
        return False
    return any(os.path.lexists(candidate / OPT_OUT_FILE) for candidate in (start, *start.parents))
