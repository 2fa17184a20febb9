"""Settings: defaults, then ``config.toml``, then ``MEMORIES_*`` environment variables.

Only non-secret knobs live here. Passwords and tokens come from prompts, flags or the
environment, never from the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memories import paths
from memories.errors import UsageError

__all__ = ["Settings", "load_settings"]

#: Tables of config.toml that their own subsystem validates (``[rag]``: memories.rag.config).
_SECTIONS = ("rag",)

# name: (environment variable, default, lowest, highest)
_NUMBERS: dict[str, tuple[str, float, float, float]] = {
    "idle_lock_minutes": ("MEMORIES_IDLE_LOCK_MINUTES", 15, 0.01, 24 * 60),
    "elevation_minutes": ("MEMORIES_ELEVATION_MINUTES", 5, 0.01, 60),
    "max_file_mib": ("MEMORIES_MAX_FILE_MIB", 64, 1, 1024),
    # How often the daemon syncs while unlocked; 0 turns periodic sync off.
    "sync_interval_minutes": ("MEMORIES_SYNC_INTERVAL_MINUTES", 5, 0, 24 * 60),
}


@dataclass(frozen=True)
class Settings:
    data_home: Path
    store_path: Path
    socket_path: Path
    log_path: Path
    config_file: Path
    idle_lock_minutes: float
    elevation_minutes: float
    max_file_mib: float
    #: The ``[rag]`` table of config.toml as written (validated by memories.rag.config).
    rag: Mapping[str, object] = field(default_factory=dict)
    sync_interval_minutes: float = 5.0

    @property
    def idle_lock_seconds(self) -> float:
        return self.idle_lock_minutes * 60

    @property
    def elevation_seconds(self) -> float:
        return self.elevation_minutes * 60

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mib * 1024 * 1024)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Resolve settings. Raises ``UsageError`` naming the file/variable and key that is wrong."""
    env = os.environ if env is None else env
    file = paths.config_file(env)
    values: dict[str, float] = {name: spec[1] for name, spec in _NUMBERS.items()}
    sections: dict[str, Mapping[str, object]] = {}
    if file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file}: {exc}") from exc
        for key, value in data.items():
            if key in _SECTIONS:
                if not isinstance(value, dict):
                    raise UsageError(f"{file}: {key} must be a table ([{key}])")
                sections[key] = value
                continue
            if key not in _NUMBERS:
                raise UsageError(f"{file}: unknown setting {key!r}")
            values[key] = _number(value, f"{file}: {key}", _NUMBERS[key])
    for key, spec in _NUMBERS.items():
        raw = env.get(spec[0])
        if raw:
            values[key] = _number(raw, spec[0], spec)
    return Settings(
        data_home=paths.data_home(env),
        store_path=paths.store_path(env),
        socket_path=paths.socket_path(env),
        log_path=paths.log_path(env),
        config_file=file,
        rag=sections.get("rag", {}),
        **values,
    )


def _number(value: object, where: str, spec: tuple[str, float, float, float]) -> float:
    _, _, low, high = spec
    try:
        if isinstance(value, bool):
            raise ValueError("a boolean")
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UsageError(f"{where} must be a number") from None
    if not low <= number <= high:
        raise UsageError(f"{where} must be between {low:g} and {high:g}")
    return number
