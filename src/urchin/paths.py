"""Where urchin keeps things, following the XDG base directories on every platform.

The spec fixes these paths (``~/.local/share/urchin``, ``~/.config/urchin``) so
files stay compatible with other urchin implementations.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["config_file", "data_dir", "default_journal_path", "home_dir", "tool_home"]


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _xdg(env: Mapping[str, str], name: str, fallback: str) -> Path:
    value = env.get(name)
    # XDG says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return home_dir(env) / fallback


def tool_home(env: Mapping[str, str] | None, variable: str, default_name: str) -> Path:
    """Another tool's folder: ``$variable`` when set, else ``~/default_name``."""
    env = os.environ if env is None else env
    explicit = env.get(variable)
    if explicit:
        return Path(explicit).expanduser()
    return home_dir(env) / default_name


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/urchin`` (default ``~/.local/share/urchin``).

    Holds the journal, the ephemeral flag, checkpoints and the index.
    """
    env = os.environ if env is None else env
    return _xdg(env, "XDG_DATA_HOME", ".local/share") / "urchin"


def default_journal_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / "journal" / "events.jsonl"


def config_file(env: Mapping[str, str] | None = None) -> Path:
    """``URCHIN_CONFIG``, else ``$XDG_CONFIG_HOME/urchin/config.toml``."""
    env = os.environ if env is None else env
    explicit = env.get("URCHIN_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return _xdg(env, "XDG_CONFIG_HOME", ".config") / "urchin" / "config.toml"
