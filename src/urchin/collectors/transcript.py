"""The kit every agent-transcript collector is built on.

One behaviour for what all of them do:

* typed field access (:func:`as_int`, :func:`as_str`, :func:`as_dict`, :func:`as_list`,
  :func:`dig`), so a float, a bool or a blank string means the same in every collector;
* slash commands (:func:`slash_command`), one grammar, each collector choosing its policy;
* clipping content (:func:`clip`) and summarising a tool call's input (:func:`tool_summary`);
* tailing a JSONL file from its checkpoint entry (:class:`JsonlTail`), with malformed,
  oversized and replaced files counted in a :class:`Tally`;
* bounded memories of what was emitted (:class:`RecentKeys`) and of prompts recorded
  from another log of the same agent (:class:`PromptMatcher`).

Batching events into journal writes lives in the run (:meth:`CollectorRun.add`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from hashlib import sha256 as _sha256
from json.scanner import make_scanner
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urchin.collectors.tail import DEFAULT_MAX_LINE_BYTES, FileState, FileTail
from urchin.errors import MalformedEventError
from urchin.event import parse_timestamp

if TYPE_CHECKING:
    from urchin.collectors.base import CollectorRun

__all__ = [
    "MAX_CONTENT",
    "TOOL_SUMMARY",
    "JsonlTail",
    "PromptMatcher",
    "RecentKeys",
    "SlashCommand",
    "Tally",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "clip",
    "dig",
    "epoch_ms",
    "from_epoch_ms",
    "from_epoch_seconds",
    "keep_under",
    "listing",
    "optional_timestamp",
    "parse_json_line",
    "put",
    "slash_command",
    "tool_summary",
    "unchanged_since",
]

log = logging.getLogger(__name__)

#: Content cap for one event; longer text is cut with a marker.
MAX_CONTENT = 4096
#: Cap for the one-line summary of a tool call's input.
TOOL_SUMMARY = 300
SEEN_LIMIT = 10_000
PROMPT_WINDOW_MS = 10 * 60 * 1000
_PROMPT_KEEP_MS = 24 * 3600 * 1000
_PROMPT_LIMIT = 5_000
_LATEST_EPOCH_S = 253_402_300_799  # 9999-12-31T23:59:59Z


# -- typed field access ---------------------------------------------------------------------


def as_int(value: object) -> int | None:
    """An integer field: ints as they are, finite floats truncated; bools and the rest None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def as_str(value: object) -> str | None:
    """A text field: the string when it holds more than whitespace, else None."""
    return value if isinstance(value, str) and value.strip() else None


def as_dict(value: object) -> dict[str, Any]:
    """An object field: the dict itself (not a copy), or an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """An array field: the list itself (not a copy), or an empty one."""
    return value if isinstance(value, list) else []


def dig(value: object, *keys: str) -> Any:
    """``value[k1][k2]…`` through nested objects; None where one is missing or not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def parse_json_line(line: bytes) -> object:
    """The decoded line, or raise ValueError for anything that is not JSON."""
    try:
        if line[:1] not in _PLAIN_FIRST or line[1:2] == b"\x00":
            return json.loads(line)
        # What json.loads(bytes) does for a line it detects as UTF-8 (no BOM, no NUL of
        # UTF-16/32 in the first bytes, no leading whitespace), calling the scanner
        # itself: loads adds encoding detection and two wrapper calls per line.
        text = line.decode("utf-8", "surrogatepass")
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:
            raise ValueError("not a JSON value") from None
        if end != len(text) and _JSON_SPACE.fullmatch(text, end) is None:
            raise ValueError("extra data after the JSON value")
        return value
    except RecursionError:
        raise ValueError("nested too deeply") from None


# First bytes of a JSON text that json.loads(bytes) reads as UTF-8: its opening bracket.
_PLAIN_FIRST = frozenset((b"{", b"["))
# The scanner json.JSONDecoder builds for itself; it reads its options off the decoder
# (typeshed wants a scanner there, see the TODO in its _json stub).
_SCAN = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
# The whitespace JSON allows after a value (str.isspace would accept more).
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


# -- time ------------------------------------------------------------------------------------


def optional_timestamp(value: object) -> datetime | None:
    """An RFC 3339 timestamp field, or None when missing or unreadable."""
    try:
        return parse_timestamp(value)
    except MalformedEventError:
        return None


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_epoch_seconds(value: object) -> datetime | None:
    """Epoch seconds (int or float) as a UTC time; None when not a plausible time."""
    seconds = value if isinstance(value, float) else as_int(value)
    if seconds is None or not math.isfinite(seconds) or not 0 < seconds <= _LATEST_EPOCH_S:
        return None
    return datetime.fromtimestamp(seconds, UTC)


def from_epoch_ms(value: object) -> datetime | None:
    """Epoch milliseconds as a UTC time; None when not a plausible time."""
    ms = as_int(value)
    return None if ms is None else from_epoch_seconds(ms / 1000)


# -- content ---------------------------------------------------------------------------------


def clip(text: str, limit: int = MAX_CONTENT) -> str:
    """Trim whitespace and cut ``text`` to ``limit`` characters, marking the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def tool_summary(name: str, args: object, fields: tuple[str, ...]) -> str:
    """A one-line description of a tool call's input, from the fields people recognise.

    The named ``fields`` that hold text come first; without any, the input as compact JSON;
    without input, the tool's name.
    """
    data = args if isinstance(args, dict) else {}
    parts = [
        f"{field}: {' '.join(value.split())}"
        for field in fields
        if isinstance(value := data.get(field), str) and value.strip()
    ]
    if not parts and data:
        try:
            parts = [json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)]
        except (TypeError, ValueError, RecursionError):
            parts = []
    return clip("; ".join(parts) or name, TOOL_SUMMARY)


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A prompt that is a slash command: its name (with the prefix) and what follows it."""

    name: str
    args: str


_SLASH = re.compile(r"([/?][A-Za-z][\w:.-]*)(?:\s+(.*))?", re.DOTALL)


def slash_command(text: str, prefixes: str = "/") -> SlashCommand | None:
    """The slash command ``text`` is (``/name args…``), or None for an ordinary prompt.

    ``prefixes`` are the characters that may start a command (Gemini also accepts ``?``).
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in prefixes:
        return None
    match = _SLASH.fullmatch(stripped)
    if match is None:
        return None
    return SlashCommand(match.group(1), (match.group(2) or "").strip())


# -- bounded memories ------------------------------------------------------------------------


class RecentKeys:
    """A bounded, insertion-ordered set of record keys, kept in the checkpoint as short hashes.

    Collectors of id-keyed records use it to drop records they already emitted when a
    file is re-read, a line is written twice, or a forked session repeats earlier lines.
    Past ``limit`` the oldest keys are forgotten, in memory as well as in the checkpoint,
    so a long run holds no more than about twice ``limit``.

    The checkpoint holds each key's hash (:func:`~urchin.collectors.tail.record_key`).
    In memory, a key added in this run is kept as it is when short and hashed only when
    saved: a key needs hashing to be looked up only while keys loaded from the checkpoint
    remain, and a first run over a large history has none.
    """

    def __init__(self, saved: object, limit: int = SEEN_LIMIT) -> None:
        self.limit = limit
        # Entries are hashes (loaded, or of long keys) or _RAW + a short key added here.
        self._keys: dict[str, None] = dict.fromkeys(k for k in as_list(saved) if isinstance(k, str))
        # How many loaded hashes are left. They are the oldest entries (an entry moves to
        # the end only as a raw key), so trimming the front drops them first.
        self._loaded = len(self._keys)

    def _entry(self, key: str) -> tuple[str, str | None]:
        """The entry ``key`` is stored as, and its hash when a loaded one may hold it."""
        if len(key) > _RAW_LIMIT:
            return _key_hash(key), None
        return _RAW + key, _key_hash(key) if self._loaded else None

    def __contains__(self, key: str) -> bool:
        entry, hashed = self._entry(key)
        return entry in self._keys or (hashed is not None and hashed in self._keys)

    def add(self, key: str) -> None:
        entry, hashed = self._entry(key)
        keys = self._keys
        if hashed is not None and keys.pop(hashed, 0) is None:
            self._loaded -= 1
        keys.pop(entry, None)
        keys[entry] = None
        self._trim()

    def first_time(self, key: str) -> bool:
        """Add ``key``; whether it was new (one look-up, where ``in`` then ``add`` take two)."""
        keys = self._keys
        if len(key) > _RAW_LIMIT:
            entry = _key_hash(key)
        else:
            entry = _RAW + key
            if self._loaded and _key_hash(key) in keys:
                return False
        if entry in keys:
            return False
        keys[entry] = None
        if len(keys) > 2 * self.limit:
            self._trim()
        return True

    def _trim(self) -> None:
        keys = self._keys
        if len(keys) > 2 * self.limit:
            dropped = len(keys) - self.limit
            self._keys = dict.fromkeys(list(keys)[-self.limit :])
            self._loaded = max(0, self._loaded - dropped)

    def to_json(self) -> list[str]:
        """The hashed keys to save, oldest first, at most ``limit`` of them."""
        return [
            _key_hash(entry[1:]) if entry.startswith(_RAW) else entry
            for entry in list(self._keys)[-self.limit :]
        ]


# Marks a key kept as it is; a hash is hex, so it never starts with this.
_RAW = "\x00"
# Longer keys (a prompt's text, say) are hashed at once, so memory stays small.
_RAW_LIMIT = 200


def _key_hash(key: str) -> str:
    """``record_key(None, key)``, spelled out: it runs for many items of many lines."""
    return _sha256(("\x1f" + key).encode("utf-8", "surrogatepass")).hexdigest()[:16]


class PromptMatcher:
    """Prompts recorded from one log of an agent, so the same prompt from another is dropped.

    Agents log a prompt both in the session transcript and in a prompt history;
    whichever is read first is recorded, and its twin (same text, tagged by another
    log, within ten minutes) is dropped and consumed, so typing the same prompt
    twice still counts twice. Saved entries are ``[tag, key, epoch ms]``.
    """

    def __init__(self, saved: object) -> None:
        self._by_key: dict[str, list[tuple[str, int]]] = {}
        self._count = 0
        for entry in as_list(saved):
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and isinstance(entry[0], str)
                and isinstance(entry[1], str)
                and as_int(entry[2]) is not None
            ):
                self._by_key.setdefault(entry[1], []).append((entry[0], int(entry[2])))
                self._count += 1

    def seen_elsewhere(
        self, tag: str, text: str, when_ms: int, *, window_ms: int | None = PROMPT_WINDOW_MS
    ) -> bool:
        """Whether another log already recorded ``text``; consume that record if so.

        ``window_ms`` None matches regardless of time, for logs without timestamps.
        """
        key = _key_hash(" ".join(text.split()))
        entries = self._by_key.setdefault(key, [])
        for index, (other, at) in enumerate(entries):
            if other != tag and (window_ms is None or abs(at - when_ms) <= window_ms):
                del entries[index]
                self._count -= 1
                return True
        entries.append((tag, when_ms))
        self._count += 1
        if self._count > 2 * _PROMPT_LIMIT:
            self._prune()
        return False

    def _prune(self) -> None:
        kept: dict[str, list[tuple[str, int]]] = {}
        for tag, key, at in self.to_json():
            kept.setdefault(key, []).append((tag, at))
        self._by_key = kept
        self._count = sum(len(entries) for entries in kept.values())

    def to_json(self) -> list[list[Any]]:
        """The entries to save: those within a day of the newest, at most a few thousand.

        Pruning follows the prompts' own clock, not the wall clock, so a log read late
        (a laptop that slept for days) still finds its twin.
        """
        rows = sorted(
            (at, tag, key) for key, entries in self._by_key.items() for tag, at in entries
        )
        if rows:
            cutoff = rows[-1][0] - _PROMPT_KEEP_MS
            rows = [row for row in rows if row[0] >= cutoff]
        return [[tag, key, at] for at, tag, key in rows[-_PROMPT_LIMIT:]]


# -- reading files ---------------------------------------------------------------------------


@dataclass
class Tally:
    """Lines one run stepped over, across every file of a collector."""

    malformed: int = 0
    oversized: int = 0
    replaced: int = 0

    def report(self, run: CollectorRun, what: str = "files") -> None:
        """Count the skipped lines in the run's result and say once what happened."""
        run.skip(self.malformed + self.oversized)
        if self.malformed:
            log.warning("%s: skipped %d malformed lines", run.name, self.malformed)
        if self.oversized:
            log.warning("%s: skipped %d oversized lines", run.name, self.oversized)
        if self.replaced:
            log.warning(
                "%s: %d %s were replaced or truncated; re-read them", run.name, self.replaced, what
            )


def unchanged_since(path: Path, state: FileState) -> bool:
    """Whether a cheap stat shows nothing new since the checkpoint (same file, same end)."""
    try:
        info = path.stat()
    except OSError:
        return False
    return (info.st_dev, info.st_ino, info.st_size) == (state.dev, state.inode, state.offset)


class JsonlTail:
    """One JSONL file read from its saved checkpoint entry, one decoded record at a time.

    ::

        tail = JsonlTail(path, saved_entry, tally, max_line_bytes=limit)
        if tail.unchanged():
            return saved_entry
        for line, record in tail.records():
            ...              # tail.floor: after a rewrite, records older than this are known
            tail.saw(ms)     # the newest record time, kept as the entry's ``last_ms``
        return tail.entry(run, session=...)   # None once the file is gone

    Blank lines are skipped; malformed lines are counted in the tally; an unreadable
    file ends :meth:`records` early and :meth:`entry` reports it and keeps the old entry.
    ``skip_line``, when given, is asked first about each raw line; lines it rejects are
    counted as seen without being decoded.
    """

    def __init__(
        self,
        path: Path,
        previous: object,
        tally: Tally,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.path = path
        self.previous = previous
        self.prior = as_dict(previous)
        self.state = FileState.from_json(self.prior)
        self.tally = tally
        self.max_line_bytes = max_line_bytes
        self._last_ms = as_int(self.prior.get("last_ms"))
        # The newest time passed to saw_time, folded into last_ms when that is read.
        self._newest: datetime | None = None
        #: After a rewrite or truncation, the newest time already read: older is not new.
        self.floor: int | None = None
        self.skipped = 0
        self._checkpoint: dict[str, Any] | None = None
        self._gone = False
        self._failure: str | None = None

    def unchanged(self) -> bool:
        """Whether the file still ends where the checkpoint does (nothing new to read)."""
        return self.state is not None and unchanged_since(self.path, self.state)

    def records(
        self, skip_line: Callable[[bytes], bool] | None = None
    ) -> Iterator[tuple[bytes, object]]:
        """Yield ``(line, decoded value)`` for each new complete line."""
        try:
            with FileTail(self.path, self.state, max_line_bytes=self.max_line_bytes) as tail:
                self.floor = self.last_ms if tail.replaced else None
                self.tally.replaced += tail.replaced
                for _, line in tail.lines():
                    if not line.strip():
                        continue
                    if skip_line is not None and skip_line(line):
                        self.skipped += 1
                        continue
                    try:
                        record = parse_json_line(line)
                    except ValueError:
                        self.tally.malformed += 1
                        continue
                    yield line, record
                self.tally.oversized += tail.oversized
                self._checkpoint = tail.checkpoint()
        except FileNotFoundError:
            self._gone = True
        except OSError as exc:
            self._failure = f"cannot read {self.path}: {exc.strerror or type(exc).__name__}"

    @property
    def last_ms(self) -> int | None:
        """The newest record time seen (epoch ms), saved as the entry's ``last_ms``."""
        newest = self._newest
        if newest is not None:
            self._newest = None
            self.saw(epoch_ms(newest))
        return self._last_ms

    def saw(self, ms: int) -> None:
        """Note a record's time; the newest becomes the floor for a later re-read."""
        if self._last_ms is None or ms > self._last_ms:
            self._last_ms = ms

    def saw_time(self, moment: datetime) -> None:
        """:meth:`saw` for a time not yet in epoch ms: converted once, for the newest only."""
        newest = self._newest
        if newest is None or moment > newest:
            self._newest = moment

    def entry(self, run: CollectorRun, **extra: object) -> object:
        """The checkpoint entry to save: None when the file is gone, the old one on failure.

        ``extra`` fields are stored beside the file's position (session ids, folders).
        """
        run.skip(self.skipped)
        self.skipped = 0
        if self._gone:
            return None
        if self._failure is not None or self._checkpoint is None:
            if self._failure is not None:
                run.error(self._failure)
            return self.previous
        out = dict(self._checkpoint)
        out.update({k: v for k, v in extra.items() if v is not None})
        last_ms = self.last_ms
        if last_ms is not None:
            out["last_ms"] = last_ms
        return out


def listing(folder: Path, run: CollectorRun) -> list[os.DirEntry[str] | None]:
    """A folder's entries sorted by name; ``[None]`` when it exists but cannot be listed.

    A missing folder (or a file in its place) lists as empty; a folder that cannot be read
    is reported on the run, and the ``None`` tells the caller to keep what it saved for it.
    """
    try:
        with os.scandir(folder) as entries:
            listed: list[os.DirEntry[str] | None] = [*sorted(entries, key=lambda e: e.name)]
        return listed
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        run.error(f"cannot list {folder}: {exc.strerror or type(exc).__name__}")
        return [None]


def keep_under(target: dict[str, Any], saved: Mapping[str, Any], folder: Path) -> None:
    """Carry over saved entries below a folder that could not be listed this run."""
    prefix = str(folder) + os.sep
    target.update({k: v for k, v in saved.items() if k.startswith(prefix)})


def put(target: dict[str, Any], key: str, entry: object) -> None:
    """Store a file's checkpoint entry, or forget it when the entry is None (file gone)."""
    if entry is None:
        target.pop(key, None)
    else:
        target[key] = entry
