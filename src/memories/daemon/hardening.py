"""Keeping the daemon's memory (keys, plaintext) out of core dumps and away from same-user
readers, as far as the operating system allows.

- Linux: ``prctl(PR_SET_DUMPABLE, 0)``. The kernel then writes no core dump, and another
  process of the same user can no longer attach a debugger, read ``/proc/<pid>/mem``,
  ``environ``, ``maps`` or ``fd``, unless it holds ``CAP_SYS_PTRACE`` (root usually does).
  The files under ``/proc/<pid>/`` become owned by root.
- Everywhere with ``resource``: ``RLIMIT_CORE`` is set to 0 (soft and hard), so no core file is
  written even where the first measure is missing, and the daemon's children cannot raise it.

Both are applied once, as early as the daemon starts; what was not available is logged at
debug level.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from dataclasses import dataclass

__all__ = ["Hardening", "harden_process"]

log = logging.getLogger("memories.daemon")

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


@dataclass(frozen=True)
class Hardening:
    """What :func:`harden_process` achieved."""

    #: Same-user processes cannot attach to or read the memory of this one (Linux).
    not_dumpable: bool
    #: No core file is written for this process or its children.
    no_core_dumps: bool


def harden_process() -> Hardening:
    """Make this process non-dumpable (Linux) and forbid core files (where ``resource``
    exists). Idempotent; never raises: a missing measure is reported in the result and logged
    at debug level."""
    return Hardening(not_dumpable=_not_dumpable(), no_core_dumps=_no_core_dumps())


def _not_dumpable() -> bool:
    if not sys.platform.startswith("linux"):
        log.debug("not-dumpable is not available on %s", sys.platform)
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        log.debug("prctl is not available; the process stays dumpable")
        return False
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0), 0, 0, 0) != 0:
        log.debug("prctl(PR_SET_DUMPABLE) failed (errno %d)", ctypes.get_errno())
        return False
    return bool(prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)


def _no_core_dumps() -> bool:
    try:
        import resource
    except ImportError:  # Windows
        log.debug("resource limits are not available; core dumps stay as configured")
        return False
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError) as exc:
        log.debug("cannot set RLIMIT_CORE to 0 (%s)", type(exc).__name__)
        return False
    return True
