"""Which environment variables a started daemon sees, and forgetting secret ones.

The daemon lives for hours and its initial environment stays readable in
``/proc/<pid>/environ`` for that whole time (to the same user, and to root). So the launcher
never hands it the front end's environment: :func:`daemon_environment` builds an explicit one
from an allowlist of settings that change where files are or how text is handled, and drops
anything whose name looks secret even when a pattern would admit it.

A front end that reads a password from the environment removes it again with
:func:`take_variable`, which also overwrites the value in the process's C environment block
(what ``/proc/<pid>/environ`` shows) where the C library exposes it, so neither a child process
nor a reader of that file finds it afterwards.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Mapping, MutableMapping

__all__ = [
    "DAEMON_VARIABLES",
    "DAEMON_VARIABLE_PREFIXES",
    "daemon_environment",
    "forget_secret_variables",
    "is_secret_name",
    "take_variable",
]

log = logging.getLogger("memories.daemon")

#: Passed on by exact name. ``TMPDIR`` and ``XDG_RUNTIME_DIR`` decide where the socket lives,
#: so the daemon must see the same values as the front end that will connect to it.
DAEMON_VARIABLES: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONUTF8",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        # What memories.config and memories.paths read; none of them is a secret.
        "MEMORIES_HOME",
        "MEMORIES_CONFIG",
        "MEMORIES_RUNTIME_DIR",
        "MEMORIES_IDLE_LOCK_MINUTES",
        "MEMORIES_ELEVATION_MINUTES",
        "MEMORIES_MAX_FILE_MIB",
        "MEMORIES_SYNC_INTERVAL_MINUTES",
        "MEMORIES_DEBUG",
        # Where the rclone sync transport finds the user's remotes (a path, not a secret).
        "RCLONE_CONFIG",
    }
)

#: Passed on by prefix (locale categories and the XDG base directories).
DAEMON_VARIABLE_PREFIXES: tuple[str, ...] = ("LC_", "XDG_")

_SECRET_WORDS = ("PASSWORD", "PASSWD", "PASSPHRASE", "TOKEN", "SECRET", "CREDENTIAL")
_SECRET_SUFFIXES = ("_KEY", "_PASS", "_PIN", "_AUTH", "_COOKIE")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name suggests it holds a secret (``*_PASSWORD``,
    ``*_TOKEN``, ``*_SECRET``, ``*_KEY`` and the like, in any case)."""
    upper = name.upper()
    return any(word in upper for word in _SECRET_WORDS) or upper.endswith(_SECRET_SUFFIXES)


def daemon_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment to start a daemon with: the allowlisted entries of ``env``, never one
    whose name looks secret."""
    return {
        name: value
        for name, value in env.items()
        if (name in DAEMON_VARIABLES or name.startswith(DAEMON_VARIABLE_PREFIXES))
        and not is_secret_name(name)
    }


def take_variable(name: str, environ: MutableMapping[str, str] | None = None) -> str | None:
    """Read ``name`` from the environment and remove it, so no child process inherits it.

    When ``environ`` is the process environment (the default), the value is also overwritten
    in the C environment block first. Python's own copies of the text cannot be wiped (its
    strings are immutable); they are released when no longer used. Returns None when the
    variable is unset.
    """
    target = os.environ if environ is None else environ
    value = target.get(name)
    if value is None:
        return None
    if target is os.environ:
        _overwrite_c_environ(name)
    target.pop(name, None)
    return value


def forget_secret_variables() -> list[str]:
    """Remove every secret-looking variable from this process's environment (as
    :func:`take_variable` does) and return their names, for a process that must not keep any."""
    names = sorted(name for name in os.environ if is_secret_name(name))
    for name in names:
        take_variable(name)
    return names


def _overwrite_c_environ(name: str) -> None:
    """Zero the value of ``name`` in the C ``environ`` strings (best effort, Linux only).

    On Linux the initial strings live in the block ``/proc/<pid>/environ`` reads, which
    ``unsetenv`` does not clear. Elsewhere (macOS keeps ``environ`` behind
    ``_NSGetEnviron``) the variable is only removed, which keeps it from children.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        strncmp = libc.strncmp
        strlen = libc.strlen
        block = ctypes.c_void_p.in_dll(libc, "environ").value
    except (OSError, AttributeError, ValueError):
        log.debug("cannot reach the C environment; %s is only removed", name)
        return
    strncmp.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    strncmp.restype = ctypes.c_int
    strlen.argtypes = [ctypes.c_void_p]
    strlen.restype = ctypes.c_size_t
    prefix = os.fsencode(name) + b"="
    slot = ctypes.sizeof(ctypes.c_void_p)
    address = block
    while address:
        entry = ctypes.c_void_p.from_address(address).value
        if not entry:
            break
        # strncmp stops at the entry's NUL, so a shorter entry is never read past its end.
        if strncmp(entry, prefix, len(prefix)) == 0:
            length = strlen(entry)
            ctypes.memset(entry + len(prefix), 0, length - len(prefix))
        address += slot
