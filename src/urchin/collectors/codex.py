"""Codex CLI: prompts, replies and shell commands from Codex's rollouts, state DB and history.

Codex writes one JSONL "rollout" per thread under ``sessions/YYYY/MM/DD/`` (moved to
``archived_sessions/`` when archived), keeps a SQLite index of its threads
(``state_5.sqlite``, WAL mode, written while we read) in newer releases, and logs
every prompt in ``history.jsonl``:

* The rollout folders are scanned on every run; the thread id is the uuid at the
  end of the file name. Each rollout is tailed from a per-thread byte offset.
  When a rollout is replaced or truncated it is read again from the start, and
  lines up to the last timestamp already read are skipped, so nothing repeats.
  A rollout compressed to ``.jsonl.zst`` is read only when the optional
  ``zstandard`` module is present; a plain file beside it wins.
* The state DB, when there is one, only adds what it knows: threads found through
  watermarks on ``(created ms, id)`` and ``(updated ms, id)`` (re-read a few
  seconds behind them, which is harmless) give titles, folders, and rollouts kept
  elsewhere; archived threads, and threads whose title or first message is only a
  slash command such as ``/clear``, are skipped. The columns differ between Codex
  versions, so the query is built from ``PRAGMA table_info``. A locked or corrupt
  DB is reported and stepped over: its watermarks stay, and the rollouts and the
  history are read all the same.
* ``history.jsonl`` holds every prompt too. Prompts of threads whose rollout we
  read are skipped there; the rest (threads without a rollout) become events.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin import paths
from urchin.collectors.base import AgentFolderCollector, CollectorRun, stable_id
from urchin.collectors.codex_fields import (
    blocks_text,
    capped_lines,
    command_text,
    from_seconds,
    is_slash_command,
    json_object,
    line_digest,
    mark,
    ms_to_ts,
    read_ts,
    title,
    user_text,
)
from urchin.collectors.sqlite import open_live_sqlite
from urchin.collectors.tail import DEFAULT_MAX_LINE_BYTES, FileTail
from urchin.collectors.transcript import (
    as_dict,
    as_int,
    as_list,
    as_str,
    clip,
    listing,
)
from urchin.errors import UrchinError
from urchin.event import Actor, Event, EventKind

__all__ = ["CodexCollector", "default_home", "open_live_sqlite"]

log = logging.getLogger(__name__)

SOURCE = "codex"
_LAG_MS = 5_000
_RETAIN_MS = 30 * 24 * 3600 * 1000
_MAX_CALLS = 64
_MAX_CONTENT = 64 * 1024
_SHELL_TOOLS = frozenset(
    {"shell", "shell_command", "exec_command", "container.exec", "local_shell"}
)
# The line prefix Codex writes: timestamp, outer type, and the payload's own type.
_HEADER = re.compile(
    rb'^\{"timestamp":"([^"]{10,40})","type":"([a-z_]+)"(?:,"payload":\{"type":"([a-z_]+)"'
    rb'(?:,"call_id":"([^"\\]{1,200})")?)?'
)
# Outer line types worth parsing, and which payload types of each (None: all).
_WANTED: dict[bytes, frozenset[bytes] | None] = {
    b"session_meta": None,
    b"turn_context": None,
    b"response_item": frozenset({b"message", b"function_call", b"local_shell_call"}),
    b"event_msg": frozenset({b"exec_command_end"}),
}
# Stands for an outer type not listed above: a line of it is skipped undecoded.
_NOTHING: frozenset[bytes] = frozenset()
_ROLLOUT_NAME = re.compile(
    r"rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(\.zst)?"
)


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """``$CODEX_HOME``, default ``~/.codex``."""
    return paths.tool_home(env, "CODEX_HOME", ".codex")


@dataclass(frozen=True, slots=True)
class _Thread:
    id: str
    rollout_path: str
    created_ms: int
    updated_ms: int
    archived: bool = False
    title: str = ""
    cwd: str = ""
    first_message: str = ""


class CodexCollector(AgentFolderCollector):
    """Reads Codex rollouts (found on disk and through the state DB) and ``history.jsonl``."""

    name = "codex"
    default_root = staticmethod(default_home)

    def __init__(
        self,
        home: Path | None = None,
        sqlite_home: Path | None = None,
        *,
        busy_timeout: float = 2.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        clock: Callable[[], float] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        super().__init__(home, max_line_bytes=max_line_bytes, env=env)
        self.home = self.root
        if sqlite_home is None and env.get("CODEX_SQLITE_HOME"):
            sqlite_home = Path(env["CODEX_SQLITE_HOME"]).expanduser()
        self.sqlite_home = sqlite_home if sqlite_home is not None else self.home
        self.busy_timeout = busy_timeout
        self._clock = clock or time.time

    @property
    def history_path(self) -> Path:
        return self.home / "history.jsonl"

    @property
    def db_path(self) -> Path:
        """``state_5.sqlite``, or the newest ``state_<n>.sqlite`` when a later Codex renamed it."""
        default = self.sqlite_home / "state_5.sqlite"
        if default.is_file():
            return default
        found: list[tuple[int, Path]] = []
        with contextlib.suppress(OSError):
            for path in self.sqlite_home.glob("state_*.sqlite"):
                number = path.stem.removeprefix("state_")
                if number.isdigit():
                    found.append((int(number), path))
        return max(found)[1] if found else default

    def available(self) -> bool:
        return (
            self.db_path.is_file()
            or self.history_path.is_file()
            or (self.home / "sessions").is_dir()
            or (self.home / "archived_sessions").is_dir()
        )

    def collect(self, run: CollectorRun) -> None:
        """Emit new rollout lines and history prompts, then save the checkpoint.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        state = dict(run.state)
        now = int(self._clock() * 1000)
        rollouts = dict(as_dict(state.get("rollouts")))
        floor = as_int(state.get("floor_ms")) or 0
        prompts, history = self._read_history(run, dict(as_dict(state.get("history"))))
        known = self._read_threads(run, state, rollouts, prompts, floor)
        self._scan(run, rollouts, floor)
        for thread_id, entry in rollouts.items():
            if not entry.get("skip"):
                self._tail_rollout(run, thread_id, entry)
        self._emit_history(run, prompts, set(rollouts) | known)
        state["rollouts"], state["floor_ms"] = _evict(rollouts, floor, now)
        state["history"] = history
        run.save(state)

    def _read_threads(
        self,
        run: CollectorRun,
        state: dict[str, Any],
        rollouts: dict[str, Any],
        prompts: list[tuple[str, int, str, str]],
        floor: int,
    ) -> set[str]:
        """Track the threads the state DB lists as new or changed; the history's known ones.

        A DB that cannot be read is reported and leaves its watermarks where they were.
        """
        db = self.db_path
        if not db.is_file():
            return set()
        marks = as_dict(state.get("threads"))
        try:
            with open_live_sqlite(db, busy_timeout=self.busy_timeout) as conn:
                reader = _ThreadReader.inspect(conn)
                threads = reader.changed(marks) if reader else []
                sessions = {sid for sid, _, _, _ in prompts}
                known = reader.existing(sessions) if reader and sessions else set()
        except UrchinError as exc:
            run.error(exc.message)
            return set()
        for thread in threads:
            self._track(run, rollouts, thread, floor)
        state["threads"] = _advance(marks, threads)
        return known

    def _scan(self, run: CollectorRun, rollouts: dict[str, Any], floor: int) -> None:
        """Add every rollout on disk to ``rollouts``, at its current place.

        A rollout not tracked and not changed since the last thread was forgotten was
        read back then (see :func:`_evict`); it is left alone.
        """
        for thread_id, path in self._rollout_files(run).items():
            entry = rollouts.get(thread_id)
            if entry is None:
                try:
                    mtime_ms = path.stat().st_mtime_ns // 1_000_000
                except OSError:
                    continue
                if floor and mtime_ms <= floor:
                    continue
                entry = {}
                if floor:
                    entry["resume"] = [ms_to_ts(floor), 1 << 30]
                rollouts[thread_id] = entry
            entry["path"] = str(path.with_name(path.name.removesuffix(".zst")))

    def _rollout_files(self, run: CollectorRun) -> dict[str, Path]:
        """Thread id → rollout file, from ``sessions/YYYY/MM/DD/`` and ``archived_sessions/``."""
        found: dict[str, Path] = {}
        for top in (self.home / "archived_sessions", self.home / "sessions"):
            folders = [top]
            while folders:
                folder = folders.pop()
                for entry in listing(folder, run):
                    if entry is None:
                        continue
                    match = _ROLLOUT_NAME.fullmatch(entry.name)
                    if match is not None and entry.is_file():
                        thread_id = match.group(1)
                        # A plain rollout wins over its compressed copy; sessions/ wins.
                        if match.group(2) is None or thread_id not in found:
                            found[thread_id] = Path(entry.path)
                    elif entry.is_dir() and len(folder.relative_to(top).parts) < 3:
                        folders.append(Path(entry.path))
        return found

    # -- threads -------------------------------------------------------------------------

    def _track(
        self, run: CollectorRun, rollouts: dict[str, Any], thread: _Thread, floor: int
    ) -> None:
        entry = dict(as_dict(rollouts.get(thread.id)))
        if thread.archived or any(
            is_slash_command(text) for text in (thread.title, thread.first_message)
        ):
            # Remembered as skipped, so the scan of the rollout folders leaves it alone.
            rollouts[thread.id] = {"skip": True, "seen": thread.updated_ms}
            run.skip()
            return
        entry.pop("skip", None)
        if not entry and floor and thread.created_ms <= floor:
            # Seen before and forgotten: skip everything up to the forgetting point.
            entry["resume"] = [ms_to_ts(floor), 1 << 30]
        entry["path"] = thread.rollout_path or entry.get("path") or ""
        entry["title"] = title(thread.title or thread.first_message)
        entry.setdefault("cwd", thread.cwd)
        entry["seen"] = max(as_int(entry.get("seen")) or 0, thread.updated_ms)
        rollouts[thread.id] = entry

    def _locate(self, stored: str) -> Path | None:
        """The rollout's current file: where the DB says, or moved to archived_sessions/."""
        if not stored:
            return None
        path = Path(stored)
        candidates = [path, self.home / "archived_sessions" / path.name]
        match = re.match(r"rollout-(\d{4})-(\d{2})-(\d{2})T", path.name)
        if match:
            candidates.append(self.home.joinpath("sessions", *match.groups(), path.name))
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        for candidate in candidates:
            compressed = candidate.with_name(candidate.name + ".zst")
            if compressed.is_file():
                return compressed
        return None

    # -- rollouts ------------------------------------------------------------------------

    def _tail_rollout(self, run: CollectorRun, thread_id: str, entry: dict[str, Any]) -> None:
        path = self._locate(str(entry.get("path") or ""))
        if path is None:
            return  # not written yet (Codex creates it lazily) or deleted
        try:
            info = path.stat()
        except OSError:
            return
        entry["seen"] = max(as_int(entry.get("seen")) or 0, info.st_mtime_ns // 1_000_000)
        if path.suffix == ".zst":
            self._read_compressed(run, thread_id, entry, path, info.st_size)
            return
        tail = as_dict(entry.get("tail"))
        if (tail.get("dev"), tail.get("inode"), tail.get("size"), tail.get("offset")) == (
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_size,
        ):
            return  # unchanged since the last read
        parser = _RolloutParser(thread_id, entry, run.actor)
        reader = FileTail(path, tail or None, max_line_bytes=self.max_line_bytes)
        try:
            reader.open()
            parser.filtering = reader.start == 0 and "resume" in entry
            try:
                self._drain(run, parser, reader.lines())
            finally:
                # Whatever was read was also emitted: keep the place even after a
                # read error, or the next run would repeat it past the checkpoint.
                if reader.position > reader.start:
                    entry["tail"] = reader.checkpoint()
                    parser.store(entry)
            entry["tail"] = reader.checkpoint()
            run.skip(reader.oversized)
        except OSError as exc:
            run.error(f"cannot read rollout {path}: {exc.strerror or type(exc).__name__}")
        finally:
            reader.close()

    def _read_compressed(
        self, run: CollectorRun, thread_id: str, entry: dict[str, Any], path: Path, size: int
    ) -> None:
        if entry.get("zst_size") == size:
            return
        try:
            zstandard: Any = importlib.import_module("zstandard")
        except ImportError:
            run.skip()
            log.warning(
                "%s: skipped compressed rollout %s (install zstandard to read it)",
                SOURCE,
                path.name,
            )
            return
        parser = _RolloutParser(thread_id, entry, run.actor)
        # Codex decompresses before appending again, so the file read from the start
        # is the one already read up to the resume point: filter by timestamp.
        parser.filtering = "resume" in entry
        try:
            with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as src:
                lines = capped_lines(io.BufferedReader(src), self.max_line_bytes)
                self._drain(run, parser, lines)
            entry["zst_size"] = size
        except (OSError, zstandard.ZstdError) as exc:
            run.error(f"cannot read compressed rollout {path}: {type(exc).__name__}")
        finally:
            parser.store(entry)  # the resume point covers every line emitted

    def _drain(
        self, run: CollectorRun, parser: _RolloutParser, lines: Iterable[tuple[int, bytes]]
    ) -> None:
        """Queue the events of ``lines``; a read error propagates after what was read."""
        try:
            for _, line in lines:
                event = parser.feed(line)
                if event is not None:
                    run.add(event)
        finally:
            run.skip(parser.skipped)
            parser.skipped = 0

    # -- history.jsonl -------------------------------------------------------------------

    def _read_history(
        self, run: CollectorRun, state: dict[str, Any]
    ) -> tuple[list[tuple[str, int, str, str]], dict[str, Any]]:
        """New ``(session, ts, text, line hash)`` prompts and the history state to save."""
        path = self.history_path
        if not path.is_file():
            return [], state
        prompts: list[tuple[str, int, str, str]] = []
        resume = _Resume.load(state.get("resume"))
        try:
            with FileTail(
                path, as_dict(state.get("tail")) or None, max_line_bytes=self.max_line_bytes
            ) as reader:
                filtering = reader.start == 0 and resume.ts is not None
                for _, line in reader.lines():
                    record = json_object(line)
                    ts = as_int(record.get("ts")) if record else None
                    if record is None or ts is None:
                        run.skip()
                        continue
                    stamp = f"{ts:012d}"
                    if filtering:
                        if resume.is_old(stamp):
                            continue
                        filtering = False
                    resume.note(stamp)
                    session = (
                        as_str(record.get("session_id"))
                        or as_str(record.get("conversation_id"))
                        or ""
                    )
                    text = as_str(record.get("text"))
                    if text is None or is_slash_command(text):
                        run.skip()
                        continue
                    prompts.append((session, ts, text, line_digest(line)))
                tail = reader.checkpoint()
                run.skip(reader.oversized)
        except OSError as exc:
            run.error(f"cannot read {path}: {exc.strerror or type(exc).__name__}")
            return [], state
        return prompts, {"tail": tail, "resume": resume.dump()}

    def _emit_history(
        self, run: CollectorRun, prompts: list[tuple[str, int, str, str]], covered: set[str]
    ) -> None:
        for session, ts, text, digest in prompts:
            if session and session in covered:
                run.skip()  # the thread's rollout carries the same prompt
                continue
            run.add(
                Event.create(
                    clip(text, _MAX_CONTENT),
                    SOURCE,
                    EventKind.CONVERSATION,
                    timestamp=from_seconds(ts),
                    event_id=stable_id(SOURCE, "history", session, str(ts), digest),
                    session=session or None,
                )
            )


class _ThreadReader:
    """The threads query, built from the columns this Codex version has."""

    def __init__(self, conn: sqlite3.Connection, columns: set[str]) -> None:
        self.conn = conn

        def ms(name: str) -> str:
            # Early rows may hold seconds or (after some migrations) milliseconds.
            seconds = f"CASE WHEN {name} < 100000000000 THEN {name} * 1000 ELSE {name} END"
            if f"{name}_ms" in columns:
                return f"COALESCE({name}_ms, {seconds})"
            return seconds

        def optional(name: str) -> str:
            return name if name in columns else "''"

        self.created = ms("created_at")
        self.updated = ms("updated_at")
        archived = "archived" if "archived" in columns else "0"
        # Every interpolated name is a literal column name checked against the table.
        self.select = (
            f"SELECT id, rollout_path, {self.created}, {self.updated}, {archived}, "  # noqa: S608
            f"{optional('title')}, {optional('cwd')}, {optional('first_user_message')} "
            "FROM threads"
        )

    @classmethod
    def inspect(cls, conn: sqlite3.Connection) -> _ThreadReader | None:
        """None when the database has no threads table (yet)."""
        columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(threads)")}
        if not {"id", "rollout_path", "created_at", "updated_at"} <= columns:
            return None
        return cls(conn, columns)

    def changed(self, marks: Mapping[str, Any]) -> list[_Thread]:
        """Threads created or updated since the watermarks (minus a short lag)."""
        created = mark(marks.get("created"))
        updated = mark(marks.get("updated"))
        sql = (
            f"{self.select} WHERE ({self.created}, id) > (?, ?) "
            f"OR ({self.updated}, id) > (?, ?) ORDER BY {self.updated}, id"
        )
        args = (created[0] - _LAG_MS, "", updated[0] - _LAG_MS, "")
        return [
            _Thread(
                id=str(row[0]),
                rollout_path=str(row[1] or ""),
                created_ms=as_int(row[2]) or 0,
                updated_ms=as_int(row[3]) or 0,
                archived=bool(row[4]),
                title=str(row[5] or ""),
                cwd=str(row[6] or ""),
                first_message=str(row[7] or ""),
            )
            for row in self.conn.execute(sql, args)
        ]

    def existing(self, ids: set[str]) -> set[str]:
        found: set[str] = set()
        items = sorted(ids)
        for start in range(0, len(items), 500):
            chunk = items[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id FROM threads WHERE id IN ({marks})"  # noqa: S608
            found.update(str(row[0]) for row in self.conn.execute(sql, chunk))
        return found


def _advance(marks: Mapping[str, Any], threads: list[_Thread]) -> dict[str, Any]:
    created = mark(marks.get("created"))
    updated = mark(marks.get("updated"))
    for thread in threads:
        created = max(created, (thread.created_ms, thread.id))
        updated = max(updated, (thread.updated_ms, thread.id))
    return {"created": list(created), "updated": list(updated)}


def _evict(rollouts: dict[str, Any], floor: int, now: int) -> tuple[dict[str, Any], int]:
    """Forget rollouts idle for a month, remembering only the latest forgotten time."""
    kept: dict[str, Any] = {}
    for thread_id, entry in rollouts.items():
        seen = as_int(entry.get("seen")) or 0
        if seen and seen < now - _RETAIN_MS:
            floor = max(floor, seen)
        else:
            kept[thread_id] = entry
    return kept, floor


class _Resume:
    """The last timestamp read and how many lines carried it: where a re-read picks up."""

    def __init__(self, ts: str | None = None, count: int = 0) -> None:
        self.ts = ts
        self.count = count
        self._replayed = 0

    @classmethod
    def load(cls, value: object) -> _Resume:
        if (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], int)
        ):
            return cls(value[0], value[1])
        return cls()

    def dump(self) -> list[Any] | None:
        return None if self.ts is None else [self.ts, self.count]

    def is_old(self, ts: str) -> bool:
        """Whether a line read again from the start was already read before."""
        if self.ts is None or ts > self.ts:
            return False
        if ts < self.ts:
            return True
        self._replayed += 1
        return self._replayed <= self.count

    def note(self, ts: str) -> None:
        if self.ts is None or ts > self.ts:
            self.ts, self.count = ts, 1
        elif ts == self.ts:
            self.count += 1


class _RolloutParser:
    """Turns rollout lines into events for one thread, remembering what it needs to resume."""

    def __init__(
        self,
        thread_id: str,
        entry: Mapping[str, Any],
        actor: Callable[[str | None], Actor] | None = None,
    ) -> None:
        self.thread_id = thread_id
        self._actor = actor
        self.cwd = as_str(entry.get("cwd"))
        self.title = as_str(entry.get("title"))
        # Insertion-ordered, so the newest calls are the ones kept; a dict, so the
        # membership test stays cheap in a rollout with thousands of calls.
        self.calls: dict[str, None] = dict.fromkeys(
            c for c in as_list(entry.get("calls")) if isinstance(c, str)
        )
        self.resume = _Resume.load(entry.get("resume"))
        self.filtering = False
        self.skipped = 0
        self._last_ts: str | None = None
        self._last_time: datetime | None = None
        self._actor_of: tuple[str | None, Actor] | None = None

    def store(self, entry: dict[str, Any]) -> None:
        entry["calls"] = list(self.calls)[-_MAX_CALLS:]
        if self.cwd:
            entry["cwd"] = self.cwd
        dumped = self.resume.dump()
        if dumped is not None:
            entry["resume"] = dumped

    def feed(self, line: bytes) -> Event | None:
        header = _HEADER.match(line)
        if header is not None:
            stamp, outer, inner, call = header.groups()
            wanted = _WANTED.get(outer, _NOTHING)
            if (
                wanted is _NOTHING
                or (wanted is not None and inner is not None and inner not in wanted)
                # A command's result line repeats a call already recorded: no need to decode it.
                or (call is not None and call.decode() in self.calls)
            ):
                # Token counts, reasoning, tool output: skipped without decoding JSON.
                ts = stamp.decode("ascii", "replace")
                if self.filtering:
                    self._seen(ts)
                else:
                    self.resume.note(ts)
                self.skipped += 1
                return None
        record = json_object(line)
        if record is None:
            self.skipped += 1
            return None
        ts = record.get("timestamp")
        if not isinstance(ts, str) or not ts.strip():
            ts = ""
        if not self._seen(ts):
            return None
        kind = record.get("type")
        payload = record.get("payload")
        if not isinstance(payload, dict):
            # Rollouts from before mid-2025 hold bare response items.
            payload, kind = record, "response_item"
        match kind:
            case "session_meta" | "turn_context":
                self.cwd = as_str(payload.get("cwd")) or self.cwd
                return None
            case "response_item":
                return self._response_item(payload, ts, line)
            case "event_msg" if payload.get("type") == "exec_command_end":
                return self._command(payload.get("call_id"), payload.get("command"), ts)
            case _:
                self.skipped += 1
                return None

    def _seen(self, ts: str) -> bool:
        """Account for a line's timestamp; False when a re-read already covered the line."""
        if self.filtering:
            if not ts or self.resume.is_old(ts):
                return False
            self.filtering = False  # timestamps only grow: the rest is new
        if ts:
            self.resume.note(ts)
        return True

    def _response_item(self, item: dict[str, Any], ts: str, line: bytes) -> Event | None:
        match item.get("type"):
            case "message":
                role = item.get("role")
                if role == "user":
                    text = user_text(item.get("content"))
                    kind = EventKind.CONVERSATION
                elif role == "assistant":
                    text = blocks_text(item.get("content"), "output_text")
                    kind = EventKind.AGENT
                else:
                    text = ""
                if not text:
                    self.skipped += 1
                    return None
                event_id = stable_id(SOURCE, self.thread_id, "line", ts, line_digest(line))
                return self._event(kind, text, ts, event_id)
            case "function_call" if item.get("name") in _SHELL_TOOLS:
                arguments = item.get("arguments")
                args = (
                    json_object(arguments.encode("utf-8")) if isinstance(arguments, str) else None
                )
                command = (args or {}).get("cmd") or (args or {}).get("command")
                return self._command(item.get("call_id"), command, ts)
            case "local_shell_call":
                action = item.get("action")
                command = action.get("command") if isinstance(action, dict) else None
                return self._command(item.get("call_id") or item.get("id"), command, ts)
            case _:
                self.skipped += 1
                return None

    def _command(self, call_id: object, command: object, ts: str) -> Event | None:
        text = command_text(command)
        if not isinstance(call_id, str) or not call_id or not text:
            self.skipped += 1
            return None
        if call_id in self.calls:
            self.skipped += 1  # the same call, recorded again with its result
            return None
        self.calls[call_id] = None
        if len(self.calls) > 2 * _MAX_CALLS:
            self.calls = dict.fromkeys(list(self.calls)[-_MAX_CALLS:])
        event_id = stable_id(SOURCE, self.thread_id, "call", call_id)
        return self._event(EventKind.COMMAND, text, ts, event_id)

    def _event(self, kind: EventKind, text: str, ts: str, event_id: uuid.UUID) -> Event:
        moment = self._last_time
        if moment is None or ts != self._last_ts:
            # The lines of one turn share a timestamp: read it once for all of them.
            # A missing or unreadable one means "now" each time, so it is not kept.
            read = read_ts(ts)
            self._last_ts, self._last_time = (ts, read) if read else (None, None)
            moment = read or datetime.now(UTC)
        if self._actor is not None and (self._actor_of is None or self._actor_of[0] != self.cwd):
            self._actor_of = (self.cwd, self._actor(self.cwd))
        # Built directly rather than through Event.create: every field here already
        # meets its rules (text that is not blank, a UTC time, a built-in kind, the
        # fixed source), and this runs once per event.
        return Event(
            id=event_id,
            timestamp=moment,
            source=SOURCE,
            kind=kind,
            content=clip(text, _MAX_CONTENT),
            workspace=self.cwd or None,
            session=self.thread_id or None,
            title=self.title or None,
            actor=None if self._actor_of is None else self._actor_of[1],
        )
