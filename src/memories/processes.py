"""What lock files, PID files and elevation need to know about other processes.

A pid alone does not name a process for long: once it exits, the kernel may hand the same
number to an unrelated one. :func:`process_start_time` gives the second half of a stable name,
so a recycled pid is told apart from the process that held it before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["alive", "process_start_time"]

_PROC = Path("/proc")
# Fields of /proc/<pid>/stat after the parenthesised command name: field 3 (state) comes
# first, so field 22 (starttime) sits at index 22 - 3.
_STATE_INDEX = 0
_STARTTIME_INDEX = 22 - 3


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` that follow the command name, or None."""
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name may itself hold spaces and parentheses: split after the last ")".
    return stat.rpartition(")")[2].split()


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
    fields = _stat_fields(pid, _PROC)
    if fields is None:
        return True  # no /proc: trust the signal check
    return fields[_STATE_INDEX : _STATE_INDEX + 1] != ["Z"]


def process_start_time(pid: int, proc: Path = _PROC) -> int | None:
    """When ``pid`` started, in clock ticks since boot (field 22 of ``/proc/<pid>/stat``).

    Together with the pid this names one process for the life of the machine: a later process
    that is given the same pid has a later start time. None when there is no /proc (macOS),
    the process is gone, or the file cannot be parsed.
    """
    fields = _stat_fields(pid, proc)
    if fields is None or len(fields) <= _STARTTIME_INDEX:
        return None
    value = fields[_STARTTIME_INDEX]
    return int(value) if value.isdigit() else None
