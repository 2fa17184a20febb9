"""``.urchinignore``: workspaces whose activity is never captured.

A folder holding a ``.urchinignore`` file is ignored with everything below it when
the file is empty; otherwise its lines are globs relative to that folder. Global
globs live in ``urchinignore`` beside ``config.toml``. Lookups are cached for a few
seconds so collectors with many events stay fast and long-running writers still
notice edits.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from urchin import paths

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = ["IGNORE_FILE_NAME", "IgnorePolicy"]

log = logging.getLogger(__name__)

#: Name of the per-folder ignore file; the global one is ``urchinignore`` beside config.toml.
IGNORE_FILE_NAME = ".urchinignore"
_GLOBAL_FILE_NAME = "urchinignore"
# Long-running writers (``urchin serve``) notice new or edited ignore files this quickly.
_TTL_SECONDS = 5.0
_MAX_CACHED = 4096


@dataclass(frozen=True, slots=True)
class _Rules:
    """Globs from one ignore file. ``base`` anchors relative globs; None for the global file."""

    base: Path | None
    patterns: tuple[str, ...]

    def matches(self, workspace: Path) -> bool:
        if self.base is None:
            return any(_glob_matches(workspace, p, anchor=None) for p in self.patterns)
        try:
            workspace.relative_to(self.base)
        except ValueError:
            return False
        if not self.patterns:
            return True  # an empty .urchinignore ignores its whole folder
        return any(_glob_matches(workspace, p, anchor=self.base) for p in self.patterns)


def _glob_matches(workspace: Path, pattern: str, *, anchor: Path | None) -> bool:
    """Whether ``workspace`` or one of its folders matches ``pattern``.

    Absolute globs match the whole path; globs without ``/`` match a folder name; other
    relative globs match below ``anchor`` (the ignore file's folder) or, globally, at any depth.
    ``*`` also crosses ``/``.
    """
    candidates = [workspace, *workspace.parents]
    if anchor is not None:
        candidates = [c for c in candidates if c == anchor or anchor in c.parents]
    if pattern.startswith("/"):
        return any(fnmatch.fnmatchcase(str(c), pattern) for c in candidates)
    if "/" not in pattern:
        # In a folder's file, names are matched below the folder, as in .gitignore.
        return any(
            fnmatch.fnmatchcase(c.name, pattern) for c in candidates if c.name and c != anchor
        )
    if anchor is not None:
        return any(
            fnmatch.fnmatchcase(c.relative_to(anchor).as_posix(), pattern)
            for c in candidates
            if c != anchor
        )
    return any(fnmatch.fnmatchcase(str(c), "*/" + pattern) for c in candidates)


def _parse(text: str, base: Path | None, home: Path) -> _Rules:
    patterns: list[str] = []
    for line in text.splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if entry == "~" or entry.startswith("~/"):
            entry = str(home) + entry[1:]
        if len(entry) > 1:
            entry = entry.rstrip("/")
        if entry in ("*", "**", ".", "/") and base is not None:
            return _Rules(base, ())  # the whole folder
        patterns.append(entry)
    return _Rules(base, tuple(patterns))


class IgnorePolicy:
    """Workspaces whose activity is never captured.

    Globs come from ``urchinignore`` beside config.toml (one per line, ``#`` comments, ``~``
    expanded) and from ``.urchinignore`` in the workspace folder or any parent; globs in a
    folder's file are relative to that folder, and an empty one ignores the whole folder.
    Lookups are cached for a few seconds so collectors with many events stay fast.
    Thread-safe.
    """

    def __init__(self, global_file: Path | None, *, home: Path, ttl: float = _TTL_SECONDS) -> None:
        self.global_file = global_file
        self.home = home
        self.ttl = ttl
        self._lock = threading.Lock()
        self._folders: dict[Path, tuple[float, _Rules | None]] = {}
        self._verdicts: dict[str, tuple[float, bool]] = {}
        self._global: tuple[float, _Rules | None] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IgnorePolicy:
        """The policy for the current environment (global file beside the config file)."""
        return cls(
            paths.config_file(env).parent / _GLOBAL_FILE_NAME,
            home=paths.home_dir(env),
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> IgnorePolicy:
        return cls(settings.config_path.parent / _GLOBAL_FILE_NAME, home=paths.home_dir())

    def ignores(self, workspace: str | None) -> bool:
        """Whether activity in ``workspace`` must not be captured. Never raises."""
        if not workspace or not workspace.strip():
            return False
        now = time.monotonic()
        with self._lock:
            cached = self._verdicts.get(workspace)
            if cached is not None and cached[0] > now:
                return cached[1]
            verdict = self._decide(workspace, now)
            if len(self._verdicts) >= _MAX_CACHED:
                self._verdicts.clear()
            self._verdicts[workspace] = (now + self.ttl, verdict)
            return verdict

    def files_for(self, workspace: str | Path) -> list[Path]:
        """The ``.urchinignore`` files that apply to ``workspace``, nearest first."""
        path = self._normalize(str(workspace))
        if path is None:
            return []
        return [
            folder / IGNORE_FILE_NAME
            for folder in (path, *path.parents)
            if (folder / IGNORE_FILE_NAME).is_file()
        ]

    def _normalize(self, workspace: str) -> Path | None:
        text = workspace.strip()
        if text == "~" or text.startswith("~/"):
            text = str(self.home) + text[1:]
        if not os.path.isabs(text):
            return None
        return Path(os.path.normpath(text))

    def _decide(self, workspace: str, now: float) -> bool:
        path = self._normalize(workspace)
        global_rules = self._global_rules(now)
        if path is None:
            # Not a path (an intake client may send a project name): only plain globs apply.
            return global_rules is not None and any(
                fnmatch.fnmatchcase(workspace.strip(), p) for p in global_rules.patterns
            )
        if global_rules is not None and global_rules.matches(path):
            return True
        for folder in (path, *path.parents):
            rules = self._folder_rules(folder, now)
            if rules is not None and rules.matches(path):
                return True
        return False

    def _global_rules(self, now: float) -> _Rules | None:
        if self.global_file is None:
            return None
        if self._global is None or self._global[0] <= now:
            self._global = (now + self.ttl, self._read(self.global_file, None))
        return self._global[1]

    def _folder_rules(self, folder: Path, now: float) -> _Rules | None:
        cached = self._folders.get(folder)
        if cached is not None and cached[0] > now:
            return cached[1]
        rules = self._read(folder / IGNORE_FILE_NAME, folder)
        if len(self._folders) >= _MAX_CACHED:
            self._folders.clear()
        self._folders[folder] = (now + self.ttl, rules)
        return rules

    def _read(self, file: Path, base: Path | None) -> _Rules | None:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            # Unreadable: we cannot tell what it excludes, so honour it as "ignore everything
            # below" for a folder file rather than capture what the user meant to keep out.
            log.warning("cannot read ignore file %s: %s", file, exc.strerror)
            return _Rules(base, ()) if base is not None else None
        return _parse(text, base, self.home)
