"""The append-only JSONL journal.

Writing: every append is one ``write(2)`` of whole lines on an ``O_APPEND``
descriptor that stays open, under an in-process lock *and* an advisory
``flock`` on the file. POSIX only promises atomic appends below PIPE_BUF, and
agent transcripts routinely produce lines far longer than a page, so the flock
is what keeps two processes from interleaving. Writers that do not take the
flock (older urchin builds) still write whole short lines with one call.

A crashed writer can leave a torn last line with no newline. The next append
notices (under the flock) and starts with a newline, so the fragment becomes
one malformed line that readers skip, instead of swallowing the next event.

Reading streams the file, skips malformed lines and counts them, stops before
an unterminated tail, and never rewrites anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from urchin.errors import JournalReadError, JournalWriteError, MalformedEventError
from urchin.event import Event

__all__ = ["MAX_LINE_BYTES", "Journal", "JournalEntry", "JournalScan", "ScanStats"]

#: Lines longer than this are skipped (and counted) without being held in memory.
MAX_LINE_BYTES = 32 * 1024 * 1024
_READ_CHUNK = 1024 * 1024


class Journal:
    """One journal file. Thread-safe; safe to share between processes through the file.

    ``durable=True`` fsyncs after each append. Callers that batch acknowledgements
    (group commit) use ``durable=False`` and call :meth:`sync` themselves.
    """

    def __init__(self, path: Path | str, *, durable: bool = False) -> None:
        self.path = Path(path)
        self.durable = durable
        self._lock = threading.Lock()
        self._fd: int | None = None
        # Where our last write ended; if the file still ends there, the last byte
        # is our own newline and we can skip reading it back.
        self._end = -1

    # -- writing ---------------------------------------------------------------------

    def append(self, event: Event) -> None:
        """Append one event as one line.

        Raises:
            JournalWriteError: the file or its folder cannot be created or written.
        """
        self.append_lines(event.to_line())

    def append_many(self, events: Iterable[Event]) -> None:
        """Append several events with a single write, so they land contiguously.

        Raises:
            JournalWriteError: the file or its folder cannot be created or written.
        """
        data = b"".join(event.to_line() for event in events)
        if data:
            self.append_lines(data)

    def append_lines(self, data: bytes) -> None:
        """Append pre-serialized, newline-terminated journal lines.

        Raises:
            JournalWriteError: the file or its folder cannot be created or written.
        """
        if not data.endswith(b"\n"):
            raise ValueError("journal lines must end with a newline")
        with self._lock:
            try:
                fd = self._descriptor()
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    info = os.fstat(fd)
                    if info.st_nlink == 0:
                        # The journal was deleted or replaced under us: follow the path.
                        fcntl.flock(fd, fcntl.LOCK_UN)
                        self._close_locked()
                        fd = self._descriptor()
                        fcntl.flock(fd, fcntl.LOCK_EX)
                        info = os.fstat(fd)
                    size = info.st_size
                    if size and size != self._end and os.pread(fd, 1, size - 1) != b"\n":
                        data = b"\n" + data
                    _write_all(fd, data)
                    self._end = size + len(data)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                if self.durable:
                    os.fsync(fd)
            except OSError as exc:
                self._close_locked()
                raise JournalWriteError(
                    f"cannot append to the journal at {self.path}: {exc.strerror or exc}"
                ) from exc

    def sync(self) -> None:
        """Make every line appended so far durable (fsync).

        Raises:
            JournalWriteError: the fsync failed.
        """
        with self._lock:
            fd = self._fd
        if fd is None:
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            raise JournalWriteError(
                f"cannot flush the journal at {self.path}: {exc.strerror or exc}"
            ) from exc

    def _descriptor(self) -> int:
        if self._fd is not None:
            return self._fd
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Read access too: the torn-tail check reads back the last byte.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self._fd = os.open(self.path, flags, 0o600)
        self._end = -1
        return self._fd

    def _close_locked(self) -> None:
        if self._fd is not None:
            # Nothing is buffered in user space, so a failing close loses nothing.
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
            self._end = -1

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------

    def scan(self, start: int = 0) -> JournalScan:
        """Stream events from byte offset ``start`` (0 or an earlier ``end_offset``)."""
        return JournalScan(self.path, start)

    def ids(self, start: int = 0) -> set[str]:
        """Ids of the events from byte offset ``start`` on, as lower-case strings.

        Lines in our own format start with the id, so most lines are not decoded.

        Raises:
            JournalReadError: the journal exists but cannot be read.
        """
        found: set[str] = set()
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed in the finally below
        except (FileNotFoundError, NotADirectoryError):
            return found
        except OSError as exc:
            raise JournalReadError(
                f"cannot read the journal at {self.path}: {exc.strerror or exc}"
            ) from exc
        try:
            handle.seek(start)
            for line in handle:
                # A torn fragment is not an event: only whole lines (ending "}\n") count.
                if line.startswith(b'{"id":"') and line[43:46] == b'","' and line.endswith(b"}\n"):
                    found.add(line[7:43].decode("ascii", errors="replace").lower())
                elif line.endswith(b"\n"):
                    try:
                        found.add(str(Event.from_line(line).id))
                    except MalformedEventError:
                        continue
        except OSError as exc:
            raise JournalReadError(
                f"cannot read the journal at {self.path}: {exc.strerror or exc}"
            ) from exc
        finally:
            handle.close()
        return found

    def size(self) -> int:
        """Current size in bytes; 0 when the journal does not exist yet."""
        try:
            return self.path.stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return 0


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """An event and where its line sits in the file."""

    offset: int
    length: int
    event: Event


@dataclass(slots=True)
class ScanStats:
    """What a scan saw. ``end_offset`` is where the next incremental scan starts."""

    events: int = 0
    malformed: int = 0
    oversized: int = 0
    torn_tail: bool = False
    end_offset: int = 0
    malformed_offsets: list[int] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return self.malformed + self.oversized


class JournalScan:
    """Iterates the journal's valid events; :attr:`stats` fills in while iterating.

    A missing journal reads as empty. ``raw_filter`` (bytes, lower-cased) lets a
    caller skip lines that cannot match before paying for JSON decoding; lines
    skipped that way are not checked, so ``stats.malformed`` then counts only the
    lines that passed the filter.
    """

    def __init__(self, path: Path, start: int = 0, raw_filter: bytes | None = None) -> None:
        self.path = path
        self.start = start
        self.raw_filter = raw_filter
        self.stats = ScanStats(end_offset=start)

    def __iter__(self) -> Iterator[JournalEntry]:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed in the finally below
        except (FileNotFoundError, NotADirectoryError):
            return  # no journal yet reads as empty
        except OSError as exc:
            raise JournalReadError(
                f"cannot read the journal at {self.path}: {exc.strerror or exc}"
            ) from exc
        try:
            yield from self._entries(handle)
        except OSError as exc:
            raise JournalReadError(
                f"cannot read the journal at {self.path}: {exc.strerror or exc}"
            ) from exc
        finally:
            handle.close()

    def _entries(self, handle: BinaryIO) -> Iterator[JournalEntry]:
        handle.seek(self.start)
        offset = self.start
        stats = self.stats
        raw_filter = self.raw_filter
        readline = handle.readline
        while True:
            line: bytes = readline(MAX_LINE_BYTES)
            if not line:
                break
            if not line.endswith(b"\n"):
                if len(line) < MAX_LINE_BYTES:
                    stats.torn_tail = True  # a writer is mid-line, or crashed there
                    break
                skipped = _skip_rest_of_line(handle)
                if skipped is None:
                    stats.torn_tail = True
                    break
                offset += len(line) + skipped
                stats.oversized += 1
                stats.end_offset = offset
                continue
            length = len(line)
            line_offset = offset
            offset += length
            stats.end_offset = offset
            if length == 1 or line.isspace():
                continue
            if raw_filter is not None and raw_filter not in line.lower():
                continue
            try:
                event = Event.from_line(line)
            except MalformedEventError:
                stats.malformed += 1
                if len(stats.malformed_offsets) < 100:
                    stats.malformed_offsets.append(line_offset)
                continue
            stats.events += 1
            yield JournalEntry(line_offset, length, event)


def _skip_rest_of_line(handle: BinaryIO) -> int | None:
    """Consume an oversized line; return bytes consumed, or None if it never ends."""
    consumed = 0
    while True:
        part: bytes = handle.readline(_READ_CHUNK)
        if not part:
            return None
        consumed += len(part)
        if part.endswith(b"\n"):
            return consumed


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written == len(data):
        return
    # A short write (disk nearly full, signal): finish it while we still hold the flock.
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view) :]
