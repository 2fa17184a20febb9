"""Byte-offset tailing of append-mostly text files, with replacement detection.

Every line-oriented source (shell history, JSONL logs, agent transcripts) is read
the same way: from a saved byte offset to the last newline, never past it, so an
unterminated tail is read again next time once its writer finishes it.

The per-file checkpoint is ``{dev, inode, offset, size, head_sha256, mark_sha256}``:
``head_sha256`` hashes the first ``min(4096, offset)`` bytes and ``mark_sha256``
the up to 1 KiB just before the offset. The file counts as *replaced* (and is
read again from the start) when its device or inode changed, when it is now
shorter than the offset, or when either hash no longer matches.
Callers decide which re-read records are new (see :class:`SeenWindow`).

Lines longer than ``max_line_bytes`` are skipped without being held in memory and
counted in :attr:`FileTail.oversized`.

:class:`SeenWindow` is the companion for that re-read: a bounded memory of record
keys, kept in the caller's checkpoint, that tells which records of a replaced
file are new.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import stat
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, TypeGuard

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "HEAD_BYTES",
    "MARK_BYTES",
    "FileState",
    "FileTail",
    "SeenRecord",
    "SeenWindow",
    "iter_new_lines",
    "record_key",
]

#: How much of the file's start the checkpoint hashes to notice a rewrite.
HEAD_BYTES = 4096
#: How much just before the offset the checkpoint hashes, so a rewrite that keeps the
#: head but changes what came before the offset (bash without ``histappend``) is noticed.
MARK_BYTES = 1024
#: Longer lines are skipped and counted; agent transcripts hold multi-MB lines.
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024
# Lines are read one by one; with the default buffer (the file's block size, often 4 KiB)
# a transcript's multi-KiB lines cost a read(2) or two each.
_READ_BUFFER = 128 * 1024


@dataclass(frozen=True, slots=True)
class FileState:
    """Where a previous read of one file stopped, and what the file looked like."""

    dev: int
    inode: int
    offset: int
    size: int
    head_sha256: str
    #: Hash of the up to MARK_BYTES bytes just before ``offset``; None in older checkpoints.
    mark_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dev": self.dev,
            "inode": self.inode,
            "offset": self.offset,
            "size": self.size,
            "head_sha256": self.head_sha256,
        }
        if self.mark_sha256 is not None:
            out["mark_sha256"] = self.mark_sha256
        return out

    @classmethod
    def from_json(cls, value: object) -> FileState | None:
        """Read a saved checkpoint; anything missing or mistyped reads as no checkpoint."""
        if not isinstance(value, Mapping):
            return None
        numbers: list[int] = []
        for key in ("dev", "inode", "offset", "size"):
            item = value.get(key)
            if not isinstance(item, int) or isinstance(item, bool) or item < 0:
                return None
            numbers.append(item)
        head = value.get("head_sha256")
        mark = value.get("mark_sha256")
        if not isinstance(head, str) or not (mark is None or isinstance(mark, str)):
            return None
        dev, inode, offset, size = numbers
        return cls(dev, inode, offset, size, head, mark)


def _head_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileTail:
    """Reads the complete lines a file gained since a checkpoint.

    Use as a context manager; :meth:`lines` and :meth:`checkpoint` need the file open::

        with FileTail(path, saved) as tail:
            for offset, line in tail.lines():
                ...
            new_checkpoint = tail.checkpoint()

    After opening, :attr:`first` says there was no usable checkpoint and
    :attr:`replaced` says there was one but the file no longer matches it (new
    inode, shorter than the offset, or a different head); both start at offset 0.
    """

    def __init__(
        self,
        path: Path | str,
        checkpoint: Mapping[str, Any] | FileState | None,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if max_line_bytes < 2:
            raise ValueError("max_line_bytes must be at least 2")
        self.path = Path(path)
        self.previous = (
            checkpoint if isinstance(checkpoint, FileState) else FileState.from_json(checkpoint)
        )
        self.max_line_bytes = max_line_bytes
        self.first = self.previous is None
        self.replaced = False
        #: Why the file counts as replaced: "inode", "truncated" or "rewritten".
        self.reason: str | None = None
        self.dev = 0
        self.inode = 0
        self.size = 0
        self.mtime = 0.0
        self.head = b""
        self.start = 0
        #: Offset just past the last complete line consumed (yielded or skipped).
        self.position = 0
        self.oversized = 0
        #: Whether reading stopped at an unterminated last line.
        self.torn = False
        self._handle: BinaryIO | None = None

    # -- opening -----------------------------------------------------------------

    def open(self) -> FileTail:
        """Open the file and decide where reading starts.

        Raises:
            OSError: the file cannot be opened or read (FileNotFoundError,
                PermissionError, IsADirectoryError, ...).
        """
        # O_NONBLOCK: opening a FIFO must not hang the collector waiting for a writer.
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", str(self.path))
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "Not a regular file", str(self.path))
            self.dev, self.inode = info.st_dev, info.st_ino
            self.size, self.mtime = info.st_size, info.st_mtime
            self.head = os.pread(fd, HEAD_BYTES, 0)
            handle = os.fdopen(fd, "rb", buffering=_READ_BUFFER)
        except (OSError, ValueError):
            os.close(fd)
            raise
        self._handle = handle
        self.start = self._resume_offset()
        self.position = self.start
        return self

    def _resume_offset(self) -> int:
        prev = self.previous
        if prev is None:
            return 0
        if (prev.dev, prev.inode) != (self.dev, self.inode):
            return self._restart("inode")
        if self.size < prev.offset:
            return self._restart("truncated")
        if _head_hash(self.head[: min(HEAD_BYTES, prev.offset)]) != prev.head_sha256:
            return self._restart("rewritten")
        if prev.mark_sha256 is not None and prev.mark_sha256 != self._mark(prev.offset):
            return self._restart("rewritten")
        return prev.offset

    def _mark(self, offset: int) -> str:
        begin = max(0, offset - MARK_BYTES)
        handle = self._require_handle()
        return _head_hash(os.pread(handle.fileno(), offset - begin, begin))

    def _restart(self, reason: str) -> int:
        self.replaced = True
        self.reason = reason
        return 0

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> FileTail:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------

    def _require_handle(self) -> BinaryIO:
        if self._handle is None:
            raise RuntimeError("FileTail is not open")
        return self._handle

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Yield ``(offset, line)`` for each complete new line, newline stripped.

        Stops before an unterminated last line. Oversized lines are skipped and
        counted. :attr:`position` advances as lines are consumed, so a caller may
        stop early and checkpoint where it stopped.

        Raises:
            OSError: reading failed.
        """
        handle = self._require_handle()
        handle.seek(self.position)
        limit = self.max_line_bytes
        while True:
            line = handle.readline(limit)
            if not line:
                return
            if line.endswith(b"\n"):
                offset = self.position
                self.position += len(line)
                yield offset, line[:-1]
                continue
            if len(line) < limit:
                self.torn = True
                return
            rest = _skip_rest_of_line(handle)
            if rest is None:
                # Oversized and still unterminated: its writer may be mid-line.
                self.torn = True
                return
            self.position += len(line) + rest
            self.oversized += 1

    def checkpoint(self, offset: int | None = None) -> dict[str, Any]:
        """The checkpoint to save for resuming at ``offset`` (default: :attr:`position`).

        ``offset`` lets a parser hold back an incomplete multi-line record; it must
        lie between :attr:`start` and :attr:`position` and be a line start.

        Raises:
            ValueError: the offset is outside what this tail read.
            OSError: the file's head could not be re-read.
        """
        end = self.position if offset is None else offset
        if not 0 <= end <= self.position:
            raise ValueError("checkpoint offset is outside the lines read")
        need = min(HEAD_BYTES, end)
        if len(self.head) < need:
            # The file grew past the head we read at open time.
            self.head = os.pread(self._require_handle().fileno(), HEAD_BYTES, 0)
        state = FileState(
            dev=self.dev,
            inode=self.inode,
            offset=end,
            size=max(self.size, self.position),
            head_sha256=_head_hash(self.head[:need]),
            mark_sha256=self._mark(end),
        )
        return state.to_json()


def _skip_rest_of_line(handle: BinaryIO) -> int | None:
    """Consume the rest of an oversized line; bytes consumed, or None at EOF first."""
    consumed = 0
    while True:
        part = handle.readline(_SKIP_CHUNK)
        if not part:
            return None
        consumed += len(part)
        if part.endswith(b"\n"):
            return consumed


def iter_new_lines(
    path: Path | str,
    checkpoint: Mapping[str, Any] | None,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Generator[tuple[int, bytes], None, dict[str, Any]]:
    """Yield ``(offset, line)`` for the complete lines after ``checkpoint``; return the new one.

    The returned checkpoint (the generator's return value, e.g. via ``yield from``)
    resumes after the last complete line. Use :class:`FileTail` directly to learn
    whether the file was replaced or to checkpoint somewhere else.

    Raises:
        OSError: the file cannot be opened or read.
    """
    with FileTail(path, checkpoint, max_line_bytes=max_line_bytes) as tail:
        yield from tail.lines()
        return tail.checkpoint()


# -- recognising records after a re-read ------------------------------------------

#: How many record keys a :class:`SeenWindow` keeps of each sort.
WINDOW = 2000
#: How many of the last seen untimed records must reappear together to locate the old end.
ANCHOR = 32
_KEY_LENGTH = 16


def record_key(when: int | None, text: str) -> str:
    """A short hash of ``(when, text)``: what :class:`SeenWindow` stores for a record."""
    raw = f"{'' if when is None else when}\x1f{text}"
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_KEY_LENGTH]


#: A record as the window sees it: its key and its time in epoch seconds, if known.
SeenRecord = tuple[str, int | None]


class SeenWindow:
    """What a tailer remembers so that re-reading a replaced file emits only new records.

    Timed records (with a timestamp) are recognised by key, and any record at or
    before the newest one evicted from the bounded window counts as seen. Untimed
    records are recognised by order instead, because the same text can legitimately
    recur (a command typed twice): the re-read file is aligned with the sequence
    last seen, so repeats after the old end are still new.
    """

    def __init__(
        self,
        timed: dict[str, int] | None = None,
        floor: int | None = None,
        untimed: list[str] | None = None,
        untimed_full: bool = False,
    ) -> None:
        self.timed = timed or {}
        self.floor = floor
        self.untimed = untimed or []
        #: Whether older untimed keys were dropped from :attr:`untimed`.
        self.untimed_full = untimed_full

    @classmethod
    def from_json(cls, value: object) -> SeenWindow:
        """Read a saved window; anything unusable reads as empty."""
        if not isinstance(value, Mapping):
            return cls()
        timed: dict[str, int] = {}
        raw_timed = value.get("timed")
        for item in raw_timed if isinstance(raw_timed, list) else ():
            if isinstance(item, list) and len(item) == 2:
                key, when = item
                if _is_key(key) and isinstance(when, int) and not isinstance(when, bool):
                    timed[key] = when
        floor = value.get("floor")
        raw_untimed = value.get("untimed")
        untimed = [k for k in raw_untimed if _is_key(k)] if isinstance(raw_untimed, list) else []
        return cls(
            timed=timed,
            floor=floor if isinstance(floor, int) and not isinstance(floor, bool) else None,
            untimed=untimed,
            untimed_full=value.get("untimed_full") is True,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timed": [[key, when] for key, when in self.timed.items()],
            "untimed": list(self.untimed),
        }
        if self.floor is not None:
            out["floor"] = self.floor
        if self.untimed_full:
            out["untimed_full"] = True
        return out

    def select_new(self, records: Sequence[SeenRecord]) -> list[int]:
        """Indexes of the records of a re-read file that were not seen before."""
        untimed = [i for i, (_, when) in enumerate(records) if when is None]
        fresh = _unmatched(
            self.untimed, [records[i][0] for i in untimed], older_lost=self.untimed_full
        )
        keep = {untimed[i] for i in fresh}
        out: list[int] = []
        for index, (key, when) in enumerate(records):
            if when is None:
                if index in keep:
                    out.append(index)
            elif key not in self.timed and (self.floor is None or when > self.floor):
                out.append(index)
        return out

    def remember(self, records: Sequence[SeenRecord], *, whole_file: bool) -> None:
        """Record keys as seen; ``whole_file`` means the records are the file's full content."""
        if whole_file:
            self.untimed = []
            self.untimed_full = False
        self.untimed.extend(key for key, when in records if when is None)
        if len(self.untimed) > WINDOW:
            self.untimed = self.untimed[-WINDOW:]
            self.untimed_full = True
        for key, when in records:
            if when is not None:
                self.timed[key] = when
        if len(self.timed) > WINDOW:
            ordered = sorted(self.timed.items(), key=lambda item: item[1])
            cut = len(ordered) - WINDOW
            newest_evicted = ordered[cut - 1][1]
            self.floor = newest_evicted if self.floor is None else max(self.floor, newest_evicted)
            self.timed = dict(ordered[cut:])


def _is_key(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and len(value) == _KEY_LENGTH
        and all(c in "0123456789abcdef" for c in value)
    )


def _unmatched(old: Sequence[str], new: Sequence[str], *, older_lost: bool) -> list[int]:
    """Indexes of ``new`` that are not the re-written part of ``old``.

    Common case: the file is the old content, trimmed at the top, with new records
    after it; then the last ANCHOR old keys appear together and everything after
    them is new. Otherwise (writers overwriting each other, erased duplicates) an
    order-preserving diff decides. When the window had already dropped older keys,
    whatever precedes the first match is assumed old too.
    """
    if not old:
        return list(range(len(new)))
    anchor = old[-ANCHOR:]
    found = _find_run(new, anchor)
    if found is not None:
        return list(range(found + len(anchor), len(new)))
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    matched: set[int] = set()
    first: int | None = None
    for block in matcher.get_matching_blocks():
        if block.size:
            matched.update(range(block.b, block.b + block.size))
            first = block.b if first is None else first
    floor = first if older_lost and first is not None else -1
    return [i for i in range(len(new)) if i not in matched and i > floor]


def _find_run(haystack: Sequence[str], needle: Sequence[str]) -> int | None:
    """First index where ``needle`` occurs contiguously in ``haystack``."""
    if not needle or len(needle) > len(haystack):
        return None
    text = "," + ",".join(haystack) + ","
    at = text.find("," + ",".join(needle) + ",")
    if at < 0:
        return None
    # Keys are fixed-length hex, so commas only sit between keys.
    return text.count(",", 0, at)
