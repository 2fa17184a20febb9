"""The one write path every front end uses: CLI, intake, MCP and collectors.

It applies the rules every event must pass before it reaches the journal, in
one place: ephemeral mode drops everything; activity in an ignored workspace
(``.urchinignore``) is dropped; what is left has its secrets redacted; then it
is appended.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from urchin import paths
from urchin.ephemeral import Ephemeral
from urchin.event import Event
from urchin.journal import Journal
from urchin.redact import Redactor, default_redactor

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = ["IGNORE_FILE_NAME", "BatchResult", "IgnorePolicy", "Outcome", "Recorder"]

log = logging.getLogger(__name__)

#: Name of the per-folder ignore file; the global one is ``urchinignore`` beside config.toml.
IGNORE_FILE_NAME = ".urchinignore"
_GLOBAL_FILE_NAME = "urchinignore"
# Long-running writers (``urchin serve``) notice new or edited ignore files this quickly.
_TTL_SECONDS = 5.0
_MAX_CACHED = 4096


class Outcome(StrEnum):
    OK = "ok"
    DROPPED = "dropped"  # ephemeral mode: nothing written
    IGNORED = "ignored"  # every event came from an ignored workspace: nothing written


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What :meth:`Recorder.record_batch` did: how many events were written and ignored."""

    outcome: Outcome
    written: int
    ignored: int


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


def _default_ignore() -> IgnorePolicy:
    return IgnorePolicy.from_env()


@dataclass(frozen=True, slots=True)
class Recorder:
    """Ephemeral check, ignore check, redaction, append. Build with :meth:`from_settings`;
    ``Recorder(journal, ephemeral)`` uses the built-in redaction rules and the ignore files
    of the current environment."""

    journal: Journal
    ephemeral: Ephemeral
    redactor: Redactor = field(default_factory=default_redactor)
    ignore: IgnorePolicy = field(default_factory=_default_ignore)

    @classmethod
    def from_settings(cls, settings: Settings, *, durable: bool = True) -> Recorder:
        """The recorder ``settings`` describe (journal path, redaction keys, ignore files).

        Raises:
            ConfigError: a configured redaction pattern is invalid.
        """
        return cls(
            Journal(settings.journal_path, durable=durable),
            Ephemeral(settings.data_dir),
            Redactor.from_settings(settings),
            IgnorePolicy.from_settings(settings),
        )

    def prepare(self, event: Event) -> Event:
        """The event exactly as it will be written: secrets redacted."""
        return self.redactor.redact_event(event)

    def is_ignored(self, event: Event) -> bool:
        """Whether the event comes from an ignored workspace (``.urchinignore``)."""
        if self.ignore.ignores(event.workspace):
            return True
        actor = event.actor
        return (
            actor is not None
            and actor.workspace != event.workspace
            and self.ignore.ignores(actor.workspace)
        )

    def record(self, event: Event) -> Outcome:
        """Append one event unless ephemeral mode is on or its workspace is ignored.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        return self.record_batch([event]).outcome

    def record_many(self, events: Sequence[Event]) -> Outcome:
        """Append events with one write, or drop them all in ephemeral mode.

        Events from ignored workspaces are left out; :attr:`Outcome.IGNORED` means every
        event was. Use :meth:`record_batch` for the counts.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        return self.record_batch(events).outcome

    def record_batch(self, events: Iterable[Event]) -> BatchResult:
        """Like :meth:`record_many`, reporting how many events were written and ignored.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        batch = list(events)
        if self.ephemeral.is_active():
            return BatchResult(Outcome.DROPPED, 0, 0)
        kept = [self.prepare(event) for event in batch if not self.is_ignored(event)]
        ignored = len(batch) - len(kept)
        if ignored:
            log.debug("left out %d event(s) from ignored workspaces", ignored)
        if batch and not kept:
            return BatchResult(Outcome.IGNORED, 0, ignored)
        self.journal.append_many(kept)
        return BatchResult(Outcome.OK, len(kept), ignored)
