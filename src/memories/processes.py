"""Whether a process is still running, as lock files and PID files need to know."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["alive"]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. An exited process waiting to be reaped (a zombie) does not; one of
    our own children in that state is reaped here."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc: trust the signal check
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
