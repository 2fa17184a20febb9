"""Pieces the agent-transcript collectors share: content clipping, bounded dedup sets,
prompt twins across logs, and small parsing helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from urchin.collectors.tail import FileState, record_key
from urchin.errors import MalformedEventError
from urchin.event import parse_timestamp

__all__ = [
    "MAX_CONTENT",
    "PromptMatcher",
    "RecentKeys",
    "Tally",
    "clip",
    "epoch_ms",
    "optional_timestamp",
    "parse_json_line",
    "unchanged_since",
]

#: Content cap for one event; tool output beyond this is cut with a marker.
MAX_CONTENT = 4096
SEEN_LIMIT = 10_000
PROMPT_WINDOW_MS = 10 * 60 * 1000
_PROMPT_KEEP_MS = 24 * 3600 * 1000
_PROMPT_LIMIT = 5_000


def clip(text: str, limit: int = MAX_CONTENT) -> str:
    """Trim whitespace and cut ``text`` to ``limit`` characters, marking the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


class RecentKeys:
    """A bounded, insertion-ordered set of hashed record keys, kept in the checkpoint.

    Collectors of id-keyed records (agent transcripts) use it to drop records they
    already emitted when a file is re-read, a line is written twice, or a forked
    session repeats earlier lines. Keys are stored as short hashes; the oldest are
    forgotten past ``limit``.
    """

    def __init__(self, saved: object, limit: int = SEEN_LIMIT) -> None:
        self.limit = limit
        keys = saved if isinstance(saved, list) else []
        self._keys: dict[str, None] = dict.fromkeys(k for k in keys if isinstance(k, str))

    def __contains__(self, key: str) -> bool:
        return record_key(None, key) in self._keys

    def add(self, key: str) -> None:
        hashed = record_key(None, key)
        self._keys.pop(hashed, None)
        self._keys[hashed] = None

    def to_json(self) -> list[str]:
        """The keys to save, oldest first, at most ``limit`` of them."""
        return list(self._keys)[-self.limit :]


class PromptMatcher:
    """Prompts recorded from one source, so the same prompt from another is dropped.

    Agents log a prompt both in the session transcript and in a prompt history;
    whichever is read first is recorded, and its twin (same text, tagged by another
    source, within ten minutes) is dropped and consumed, so typing the same prompt
    twice still counts twice. Saved entries are ``[tag, key, epoch ms]``.
    """

    def __init__(self, saved: object) -> None:
        self._by_key: dict[str, list[tuple[str, int]]] = {}
        for entry in saved if isinstance(saved, list) else []:
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and isinstance(entry[0], str)
                and isinstance(entry[1], str)
                and isinstance(entry[2], int)
            ):
                self._by_key.setdefault(entry[1], []).append((entry[0], entry[2]))

    def seen_elsewhere(
        self, tag: str, text: str, when_ms: int, *, window_ms: int | None = PROMPT_WINDOW_MS
    ) -> bool:
        """Whether another source already recorded ``text``; consume that record if so.

        ``window_ms`` None matches regardless of time, for sources without timestamps.
        """
        key = record_key(None, " ".join(text.split()))
        entries = self._by_key.setdefault(key, [])
        for index, (other, at) in enumerate(entries):
            if other != tag and (window_ms is None or abs(at - when_ms) <= window_ms):
                del entries[index]
                return True
        entries.append((tag, when_ms))
        return False

    def to_json(self) -> list[list[Any]]:
        """The entries to save: those within a day of the newest, at most a few thousand.

        Pruning follows the prompts' own clock, not the wall clock, so a source read
        late (a laptop that slept for days) still finds its twin.
        """
        rows = sorted(
            (at, tag, key) for key, entries in self._by_key.items() for tag, at in entries
        )
        if rows:
            cutoff = rows[-1][0] - _PROMPT_KEEP_MS
            rows = [row for row in rows if row[0] >= cutoff]
        return [[tag, key, at] for at, tag, key in rows[-_PROMPT_LIMIT:]]


def parse_json_line(line: bytes) -> object:
    """The decoded line, or raise ValueError for anything that is not JSON."""
    try:
        return json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def optional_timestamp(value: object) -> datetime | None:
    try:
        return parse_timestamp(value)
    except MalformedEventError:
        return None


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass
class Tally:
    malformed: int = 0
    oversized: int = 0
    replaced: int = 0


def unchanged_since(path: Path, state: FileState) -> bool:
    """Whether a cheap stat shows nothing new since the checkpoint (same file, same end)."""
    try:
        info = path.stat()
    except OSError:
        return False
    return (info.st_dev, info.st_ino, info.st_size) == (state.dev, state.inode, state.offset)
