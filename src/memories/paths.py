"""Where memories keeps things.

``MEMORIES_HOME`` (default ``$XDG_DATA_HOME/memories``, i.e. ``~/.local/share/memories``) holds
the store; the daemon's socket lives in a private runtime folder beside it, or, when that path
would be too long for a Unix socket, under ``$XDG_RUNTIME_DIR`` or a per-user folder in ``/tmp``,
named by a hash of the data home (so several homes never share a daemon).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "config_file",
    "data_home",
    "log_path",
    "runtime_dir",
    "socket_path",
    "state_dir",
    "store_path",
]

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _xdg(env: Mapping[str, str], name: str, fallback: str) -> Path:
    value = env.get(name)
    if value and os.path.isabs(value):
        return Path(value)
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / fallback


def data_home(env: Mapping[str, str] | None = None) -> Path:
    env = _env(env)
    explicit = env.get("MEMORIES_HOME")
    if explicit:
        return Path(explicit).expanduser()
    return _xdg(env, "XDG_DATA_HOME", ".local/share") / "memories"


def store_path(env: Mapping[str, str] | None = None) -> Path:
    return data_home(env) / "store" / "memories.db"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/memories`` (default ``~/.local/state/memories``), outside the data home.

    The store keeps its second rollback anchor here, so a copy of the data home alone cannot
    roll the store back. ``MEMORIES_HOME`` deliberately does not move it.
    """
    return _xdg(_env(env), "XDG_STATE_HOME", ".local/state") / "memories"


def config_file(env: Mapping[str, str] | None = None) -> Path:
    """``MEMORIES_CONFIG``, else ``$XDG_CONFIG_HOME/memories/config.toml``."""
    env = _env(env)
    explicit = env.get("MEMORIES_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return _xdg(env, "XDG_CONFIG_HOME", ".config") / "memories" / "config.toml"


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """The daemon's private folder (0700, created by the daemon)."""
    env = _env(env)
    explicit = env.get("MEMORIES_RUNTIME_DIR")
    if explicit:
        return Path(explicit).expanduser()
    home = data_home(env)
    digest = hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:16]
    candidates = [home / "run"]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        candidates.append(Path(runtime) / "memories" / digest)
    candidates.append(Path("/tmp") / f"memories-{os.getuid()}" / digest)  # noqa: S108
    for candidate in candidates:
        if len(os.fsencode(candidate / "daemon.sock")) <= _MAX_SOCKET_PATH:
            return candidate
    return Path(tempfile.gettempdir()) / f"memories-{os.getuid()}" / digest


def socket_path(env: Mapping[str, str] | None = None) -> Path:
    return runtime_dir(env) / "daemon.sock"


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return data_home(env) / "daemon.log"
