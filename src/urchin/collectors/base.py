"""What every collector shares: the protocol, checkpoints, and crash-safe emission.

A collector reads one source, turns new records into events, and hands them to
:meth:`CollectorRun.emit`. Checkpoints are written atomically *after* the events
they cover are appended. A crash between the two re-reads the same records next
time; they carry the same deterministic ids (:func:`stable_id`), and ``emit``
drops ids already present in the journal written since the last checkpoint, so
the re-read neither loses nor duplicates anything.

What a run remembers is bounded: of the journal it keeps only the ids of its own
sources written since its checkpoint, and of what it emitted only the newest
:data:`RUN_ID_WINDOW` ids (each collector drops its own repeats with the record keys
in its checkpoint), so a run's memory does not grow with the size of what it reads.
Events are batched into journal writes by the run (:meth:`CollectorRun.add`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from urchin.collectors.tail import DEFAULT_MAX_LINE_BYTES
from urchin.errors import JournalReadError, MalformedEventError, UrchinError
from urchin.event import Actor, Event
from urchin.fsutil import write_atomically
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Outcome, Recorder

__all__ = [
    "BATCH_SIZE",
    "RUN_ID_WINDOW",
    "AgentFolderCollector",
    "CheckpointStore",
    "CollectResult",
    "Collector",
    "CollectorRun",
    "run_collector",
    "stable_id",
]

log = logging.getLogger(__name__)

# Fixed namespace so the same source record always maps to the same event id.
_NAMESPACE = uuid.UUID("6b1f2c3e-8a51-4d0e-9c57-2f0f5a7d9e11")
_NAMESPACE_BYTES = _NAMESPACE.bytes
_JOURNAL_END = "_journal_end"
#: Events per journal write when a collector adds them one at a time.
BATCH_SIZE = 500
#: How many ids emitted in this run the run itself remembers to drop repeats.
RUN_ID_WINDOW = 10_000


def stable_id(source: str, *parts: str) -> uuid.UUID:
    """A deterministic UUID (v5) for a source record, so re-reads can be recognised."""
    # uuid.uuid5 spelled out without its per-call import and namespace conversion, the
    # version and variant bits set on the integer: this runs once per collected event.
    name = "\x1f".join((source, *parts)).encode("utf-8")
    digest = hashlib.sha1(_NAMESPACE_BYTES + name, usedforsecurity=False).digest()
    return _uuid_of((int.from_bytes(digest[:16]) & _V5_CLEAR) | _V5_SET)


def _uuid_of(value: int) -> uuid.UUID:
    """``uuid.UUID(int=value)`` for a value known to fit in 128 bits.

    Built the way CPython's own uuid module builds the UUIDs it generates from 3.14 on
    (``UUID._from_int``): the constructor's checks of which of its five forms was given
    cost more than the hash. A test holds it to the constructor.
    """
    made = _new_object(uuid.UUID)
    _set_attribute(made, "int", value)
    _set_attribute(made, "is_safe", _UNKNOWN_SAFETY)
    return made


_new_object = object.__new__
_set_attribute = object.__setattr__
_UNKNOWN_SAFETY = uuid.SafeUUID.unknown
# RFC 4122 version 5: the version nibble and the variant's two top bits.
_V5_CLEAR = ((1 << 128) - 1) ^ ((0xF000 << 64) | (0xC000 << 48))
_V5_SET = (5 << 76) | (0x8000 << 48)


@dataclass
class CollectResult:
    """What one collector did in one run."""

    name: str
    available: bool = True
    new: int = 0
    skipped: int = 0
    dropped: int = 0
    ignored: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "available": self.available,
            "new": self.new,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "ignored": self.ignored,
            "errors": list(self.errors),
        }


class CheckpointStore:
    """One JSON file per collector under ``<data_dir>/checkpoints/``, replaced atomically."""

    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "checkpoints"

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def load(self, name: str) -> dict[str, Any]:
        """The saved state, or ``{}`` when there is none.

        Raises:
            UrchinError: the checkpoint exists but cannot be read or parsed. Starting
                over silently would re-emit a whole source, so we refuse instead.
        """
        path = self.path(name)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise UrchinError(f"cannot read checkpoint {path}: {exc.strerror}") from exc
        try:
            state = json.loads(raw)
        except ValueError:
            raise UrchinError(
                f"checkpoint {path} is corrupt; delete it to re-read {name} from the start"
            ) from None
        if not isinstance(state, dict):
            raise UrchinError(f"checkpoint {path} is not a JSON object; delete it to start over")
        return state

    def save(self, name: str, state: dict[str, Any]) -> None:
        """Write the state atomically (:func:`urchin.fsutil.write_atomically`).

        Raises:
            UrchinError: the checkpoint cannot be written.
        """
        path = self.path(name)
        data = json.dumps(state, separators=(",", ":"), ensure_ascii=False)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomically(path, data.encode("utf-8"), mode=0o600)
        except OSError as exc:
            raise UrchinError(f"cannot write checkpoint {path}: {exc.strerror}") from exc


class CollectorRun:
    """One collector's run: its checkpoint state, emission, and counters."""

    def __init__(
        self,
        name: str,
        recorder: Recorder,
        identity: Identity,
        checkpoints: CheckpointStore,
        *,
        sources: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.recorder = recorder
        self.identity = identity
        self.checkpoints = checkpoints
        #: The event sources this collector writes; the journal is searched for these only.
        self.sources = tuple(sources) or (name,)
        self.result = CollectResult(name)
        self.state: dict[str, Any] = checkpoints.load(name)
        # Ids are kept as their 128-bit integers: an event's id yields that without the
        # formatting str() costs, once per event.
        self._journal_ids: set[int] | None = None
        # Ordered, so the oldest id is dropped in constant time (a dict scans past the
        # holes its own deletions leave at the front).
        self._emitted: OrderedDict[int, None] = OrderedDict()
        self._pending: list[Event] = []
        self._actors: dict[str | None, Actor] = {}

    @property
    def journal(self) -> Journal:
        return self.recorder.journal

    def _ids_since_checkpoint(self) -> set[int]:
        """Ids of this collector's sources in the journal written after its last checkpoint.

        Without a usable checkpoint (first run, a deleted checkpoint, a journal that
        shrank) the whole journal is searched, so even a crash during the very first
        run cannot duplicate events.
        """
        if self._journal_ids is None:
            start = self.state.get(_JOURNAL_END)
            if not isinstance(start, int) or not 0 <= start <= self.journal.size():
                start = 0
            self._journal_ids = _source_ids(self.journal, start, self.sources)
        return self._journal_ids

    def actor(self, workspace: str | None) -> Actor:
        """The actor stamped on events from ``workspace``; pass it to ``Event.create``, so
        :meth:`emit` need not copy each event to stamp it."""
        actor = self._actors.get(workspace)
        if actor is None:
            if len(self._actors) >= 256:
                self._actors.clear()
            actor = self._actors[workspace] = self.identity.actor(workspace)
        return actor

    def emit(self, events: Iterable[Event]) -> None:
        """Append events that are not already in the journal, stamping the actor.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        fresh: list[Event] = []
        # Locals and no helper calls: this loop runs once per collected event.
        emitted = self._emitted
        in_journal = self._ids_since_checkpoint()
        skipped = 0
        for event in events:
            key = event.id.int
            if key in emitted or key in in_journal:
                skipped += 1
                continue
            if event.actor is None:
                event = event.with_actor(self.actor(event.workspace))
            fresh.append(event)
            emitted[key] = None
            if len(emitted) > RUN_ID_WINDOW:
                emitted.popitem(last=False)  # insertion order: the oldest id goes first
        self.result.skipped += skipped
        if not fresh:
            return
        batch = self.recorder.record_batch(fresh)
        if batch.outcome is Outcome.DROPPED:
            self.result.dropped += len(fresh)
        else:
            self.result.new += batch.written
            self.result.ignored += batch.ignored

    def add(self, event: Event) -> None:
        """Queue one event; queued events are written :data:`BATCH_SIZE` at a time.

        Raises:
            JournalWriteError: the journal could not be written.
        """
        self._pending.append(event)
        if len(self._pending) >= BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        """Write the queued events now (before a checkpoint, or when a read fails).

        Raises:
            JournalWriteError: the journal could not be written.
        """
        if self._pending:
            pending, self._pending = self._pending, []
            self.emit(pending)

    def skip(self, count: int = 1) -> None:
        """Count records that were read but deliberately not turned into events."""
        self.result.skipped += count

    def error(self, message: str) -> None:
        """Record a problem that did not stop the run (a bad file, a locked database)."""
        log.warning("%s: %s", self.name, message)
        self.result.errors.append(message)

    def save(self, state: dict[str, Any] | None = None) -> None:
        """Persist the checkpoint, after writing any queued events it covers.

        Raises:
            JournalWriteError: the queued events could not be written.
            UrchinError: the checkpoint cannot be written.
        """
        self.flush()
        if state is not None:
            self.state = state
        self.state[_JOURNAL_END] = self.journal.size()
        self.checkpoints.save(self.name, self.state)
        # What was written up to here is covered by the checkpoint now.
        self._journal_ids = set()
        self._emitted.clear()


def _source_ids(journal: Journal, start: int, sources: Sequence[str]) -> set[int]:
    """Ids (as integers) of the journal's events from ``start`` on whose source is one of
    ``sources``.

    Lines in our own format start ``{"id":"…","timestamp":"…","source":"…"``, so most
    are recognised without being decoded.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    wanted = {s.encode("utf-8") for s in sources}
    marks = tuple(
        b'"source":' + json.dumps(s, ensure_ascii=False).encode("utf-8") + b"," for s in sources
    )
    found: set[int] = set()
    try:
        handle = open(journal.path, "rb")  # noqa: SIM115 - closed in the finally below
    except (FileNotFoundError, NotADirectoryError):
        return found
    except OSError as exc:
        raise JournalReadError(
            f"cannot read the journal at {journal.path}: {exc.strerror}"
        ) from exc
    try:
        handle.seek(start)
        for line in handle:
            if not line.endswith(b"}\n"):
                continue  # a torn fragment is not an event
            if line.startswith(b'{"id":"') and line[43:46] == b'","':
                at = line.find(b'"source":', 46, 160)
                key = _hex_id(line[7:43])
                if at > 0 and key is not None:
                    if line.startswith(marks, at):
                        found.add(key)
                    continue
            try:
                event = Event.from_line(line)
            except MalformedEventError:
                continue
            if event.source.encode("utf-8") in wanted:
                found.add(event.id.int)
    except OSError as exc:
        raise JournalReadError(
            f"cannot read the journal at {journal.path}: {exc.strerror}"
        ) from exc
    finally:
        handle.close()
    return found


def _hex_id(raw: bytes) -> int | None:
    """The integer of a hyphenated UUID's 36 bytes; None when they are not one."""
    if len(raw) != 36 or raw[8:9] != b"-" or raw[13:14] != b"-" or raw[18:19] != b"-":
        return None
    digits = raw[:8] + raw[9:13] + raw[14:18] + raw[19:23] + raw[24:]
    if raw[23:24] != b"-" or not digits.isalnum():
        return None
    try:
        return int(digits, 16)
    except ValueError:
        return None


class Collector(ABC):
    """A read-only pull from one source. Subclasses set ``name`` and implement two methods."""

    name: ClassVar[str]
    #: The event sources the collector writes, when not only its name.
    sources: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def available(self) -> bool:
        """Whether the source exists on this machine; a missing source is a no-op."""

    @abstractmethod
    def collect(self, run: CollectorRun) -> None:
        """Emit new events through ``run`` and save the checkpoint after them.

        Raise on a failure that should keep the checkpoint where it was; call
        ``run.error`` for problems the run can step over.
        """


class AgentFolderCollector(Collector):
    """A collector over one agent's own folder.

    ``root`` defaults to where the agent keeps it (``default_root``, which honours the agent's
    environment variables); lines longer than ``max_line_bytes`` (pasted images, huge tool
    output) are skipped and counted rather than held in memory.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root if root is not None else self.default_root(env)
        self.max_line_bytes = max_line_bytes

    @staticmethod
    @abstractmethod
    def default_root(env: Mapping[str, str] | None = None) -> Path:
        """Where the agent keeps its folder on this machine."""


def run_collector(
    collector: Collector,
    recorder: Recorder,
    identity: Identity,
    checkpoints: CheckpointStore,
) -> CollectResult:
    """Run one collector; its failure is reported in the result, never raised."""
    if not collector.available():
        return CollectResult(collector.name, available=False)
    try:
        run = CollectorRun(
            collector.name, recorder, identity, checkpoints, sources=collector.sources
        )
    except UrchinError as exc:
        return CollectResult(collector.name, errors=[exc.message])
    try:
        collector.collect(run)
        # Events queued after the last checkpoint are still new; the next run skips them.
        run.flush()
    except UrchinError as exc:
        run.error(exc.message)
    except Exception as exc:  # a bug in one source must not stop the others
        # The message of a foreign exception may quote what the source holds; only its
        # type is reported, and the traceback is logged at debug level.
        log.error("collector %s failed with %s", collector.name, type(exc).__name__)
        log.debug("collector %s traceback", collector.name, exc_info=True)
        run.error(f"internal error ({type(exc).__name__}) in this collector; please report it")
    return run.result


def run_all(
    collectors: Sequence[Collector],
    recorder: Recorder,
    identity: Identity,
    checkpoints: CheckpointStore,
    *,
    stop: threading.Event | None = None,
    on_result: Callable[[CollectResult], None] | None = None,
) -> list[CollectResult]:
    """Run every collector in turn; one failing never stops the others.

    ``stop`` is checked between collectors, so a shutdown finishes the collector in
    progress (and its checkpoint) instead of abandoning it halfway.
    """
    results: list[CollectResult] = []
    for collector in collectors:
        if stop is not None and stop.is_set():
            break
        result = run_collector(collector, recorder, identity, checkpoints)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
