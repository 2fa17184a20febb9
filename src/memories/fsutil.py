"""File-system steps that durable writes share."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir"]


def fsync_dir(folder: Path) -> None:
    """Make a rename, link or unlink in ``folder`` durable. Raises ``OSError``."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
