"""OpenCode: prompts, replies and shell commands from OpenCode's SQLite database.

OpenCode (``$XDG_DATA_HOME/opencode/opencode.db``, or ``opencode-<channel>.db``)
stores a conversation as ``session`` → ``message`` → ``part`` rows. The text of a
prompt or reply lives in ``part`` rows of type ``text``; ``message.data`` only
holds the role and timing. Rows are updated in place while a reply streams, so:

* We watermark on ``part.time_updated`` and re-read a short window behind it,
  because several OpenCode processes can commit slightly out of order. A map of
  parts already decided inside that window keeps the re-read from repeating them.
* A part is emitted once it is final. A user's text is final at once. An
  assistant's text is final when the part has an end time, its message is
  completed or failed, or the part has not changed for two minutes (a reply cut
  off by a crash is still worth keeping). A ``bash`` tool part is final when its
  status is ``completed`` or ``error``; a running one waits in a bounded pending
  set that is re-checked every run. One still not finished a day after its last
  update (OpenCode was killed mid-call) is recorded with what is known, its
  command, tagged ``unfinished``.
* A part updated long after it was final (OpenCode prunes old tool output) is
  recognised by its own end time being far behind the watermark, so it is not
  emitted twice.

Older OpenCode versions wrote a JSON file per session, message and part under
``storage/``; that tree is read when no database exists, with a checkpoint map
``{relative path: [mtime_ns, size]}`` of parts already decided.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin.collectors.base import Collector, CollectorRun, stable_id
from urchin.collectors.sqlite import open_live_sqlite
from urchin.collectors.transcript import as_dict, as_int, as_str, clip, dig, from_epoch_ms
from urchin.errors import UrchinError
from urchin.event import Event, EventKind

__all__ = ["OpenCodeCollector", "default_data_dir"]

log = logging.getLogger(__name__)

SOURCE = "opencode"
_WINDOW_MS = 60_000
_QUIET_MS = 120_000
_STALE_MS = 24 * 3600 * 1000
_MAX_PENDING = 5_000
_MAX_CONTENT = 64 * 1024
_PRUNE_EVERY = 2_000
_ID_CHUNK = 500
_SHELL_TOOLS = frozenset({"bash", "shell"})


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "opencode"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".local" / "share" / "opencode"


@dataclass(frozen=True, slots=True)
class _Part:
    """One part with the message and session facts it needs, from either layout."""

    id: str
    session_id: str
    time_created: int
    time_updated: int
    data: Any
    message: Any
    directory: str | None
    title: str | None
    archived: bool


@dataclass(frozen=True, slots=True)
class _Verdict:
    """``emit`` (with an event), ``wait`` (not final yet) or ``ignore`` (final, nothing to say)."""

    action: str
    event: Event | None = None
    final_at: int | None = None


_WAIT = _Verdict("wait")
_IGNORE = _Verdict("ignore")


class OpenCodeCollector(Collector):
    """Reads every OpenCode database in ``data_dir``, or the legacy ``storage/`` tree."""

    name = "opencode"

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        busy_timeout: float = 2.0,
        clock: Callable[[], float] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir if data_dir is not None else default_data_dir(env)
        self.busy_timeout = busy_timeout
        self._clock = clock or time.time

    @property
    def storage_dir(self) -> Path:
        return self.data_dir / "storage"

    def databases(self) -> list[Path]:
        """``opencode.db`` and any ``opencode-<channel>.db``, those that exist."""
        found = [self.data_dir / "opencode.db"]
        with contextlib.suppress(OSError):
            found += sorted(self.data_dir.glob("opencode-*.db"))
        return [path for path in found if path.is_file()]

    def available(self) -> bool:
        return bool(self.databases()) or self.storage_dir.is_dir()

    def collect(self, run: CollectorRun) -> None:
        state = dict(run.state)
        now = int(self._clock() * 1000)
        databases = self.databases()
        if not databases:
            state["storage"] = self._collect_storage(run, state.get("storage"), now)
            run.save(state)
            return
        db_states = dict(as_dict(state.get("dbs")))
        legacy = _legacy_part_ids(state.get("storage"))
        for path in databases:
            prior = db_states.get(path.name)
            try:
                db_states[path.name] = self._collect_db(
                    run, path, prior if isinstance(prior, dict) else None, legacy, now
                )
            except UrchinError as exc:
                # Keep the whole checkpoint where it was: what was emitted will be
                # re-read next run and recognised by its ids.
                run.error(exc.message)
                return
        state["dbs"] = db_states
        # Parts migrated from the legacy tree were skipped by id on each database's
        # first run; once every database has a watermark the map is dead weight.
        state.pop("storage", None)
        run.save(state)

    # -- the database ------------------------------------------------------------------

    def _collect_db(
        self,
        run: CollectorRun,
        path: Path,
        prior: dict[str, Any] | None,
        legacy: frozenset[str],
        now: int,
    ) -> dict[str, Any]:
        prior = prior or {}
        prior_wm = as_int(prior.get("wm"))
        done = _int_map(prior.get("done"))
        was_pending = _int_map(prior.get("pending"))
        pending = dict(was_pending)
        skip_legacy = legacy if prior_wm is None else frozenset()
        watermark = prior_wm
        with open_live_sqlite(path, busy_timeout=self.busy_timeout) as conn:
            reader = _PartReader.inspect(conn, path)
            since = None if prior_wm is None else prior_wm - _WINDOW_MS
            seen: set[str] = set()
            unreadable = 0
            prune_at = _PRUNE_EVERY
            for part in reader.parts(since, list(was_pending)):
                seen.add(part.id)
                if watermark is None or part.time_updated > watermark:
                    watermark = part.time_updated
                if part.id in done:
                    done[part.id] = part.time_updated
                    continue
                if part.id in skip_legacy:
                    done[part.id] = part.time_updated
                    run.skip()
                    continue
                if part.data is None:
                    unreadable += 1
                verdict = _judge(part, now)
                if verdict.action == "wait":
                    if now - part.time_updated >= _STALE_MS:
                        pending.pop(part.id, None)
                        done[part.id] = part.time_updated
                        run.skip()
                    else:
                        pending[part.id] = part.time_updated
                    continue
                pending.pop(part.id, None)
                done[part.id] = part.time_updated
                if verdict.event is None or _decided_earlier(
                    verdict, part.id, prior_wm, was_pending
                ):
                    run.skip()
                    continue
                run.add(verdict.event)
                if len(done) >= prune_at:
                    # Rows arrive in update order, so older entries can go already.
                    done = _prune_done(done, watermark)
                    prune_at = max(_PRUNE_EVERY, 2 * len(done))
            # Pending parts the database no longer returns were deleted (a reverted turn).
            for gone in set(was_pending) - seen:
                pending.pop(gone, None)
        if unreadable:
            log.warning("%s: skipped %d parts whose data is not valid JSON", path, unreadable)
        if len(pending) > _MAX_PENDING:
            keep = sorted(pending.items(), key=lambda item: item[1])[-_MAX_PENDING:]
            run.skip(len(pending) - len(keep))
            pending = dict(keep)
        return {"wm": watermark, "done": _prune_done(done, watermark), "pending": pending}

    # -- the legacy JSON tree ------------------------------------------------------------

    def _collect_storage(self, run: CollectorRun, prior: object, now: int) -> dict[str, list[int]]:
        decided = prior if isinstance(prior, dict) else {}
        root = self.storage_dir
        result: dict[str, list[int]] = {}
        messages: dict[tuple[str, str], Any] = {}
        sessions: dict[str, tuple[str | None, str | None, bool]] = {}
        for part_file in _legacy_part_files(root):
            rel = part_file.relative_to(root).as_posix()
            try:
                info = part_file.stat()
            except OSError:
                continue
            signature = [info.st_mtime_ns, info.st_size]
            if rel in decided:
                result[rel] = signature
                continue
            part = _load_json(part_file)
            if not isinstance(part, dict):
                run.skip()
                result[rel] = signature
                continue
            session_id = as_str(part.get("sessionID")) or ""
            message_id = as_str(part.get("messageID")) or part_file.parent.name
            key = (session_id, message_id)
            if key not in messages:
                messages[key] = _load_json(root / "message" / session_id / f"{message_id}.json")
            if session_id not in sessions:
                sessions[session_id] = _legacy_session(root, session_id)
            directory, title, archived = sessions[session_id]
            mtime_ms = info.st_mtime_ns // 1_000_000
            created = as_int(dig(part, "time", "start")) or as_int(
                dig(messages[key], "time", "created")
            )
            verdict = _judge(
                _Part(
                    id=as_str(part.get("id")) or part_file.stem,
                    session_id=session_id,
                    time_created=created or mtime_ms,
                    time_updated=mtime_ms,
                    data=part,
                    message=messages[key],
                    directory=directory,
                    title=title,
                    archived=archived,
                ),
                now,
            )
            if verdict.action == "wait" and now - mtime_ms < _STALE_MS:
                continue  # not recorded, so it is looked at again next run
            result[rel] = signature
            if verdict.event is None:
                run.skip()
                continue
            run.add(verdict.event)
        return result


class _PartReader:
    """Queries built from the columns this OpenCode version actually has."""

    def __init__(self, conn: sqlite3.Connection, select: str, updated: str) -> None:
        self.conn = conn
        self.select = select
        self.updated = updated

    @classmethod
    def inspect(cls, conn: sqlite3.Connection, path: Path) -> _PartReader:
        """Raises UrchinError when the tables OpenCode keeps conversations in are missing."""
        part = _columns(conn, "part")
        message = _columns(conn, "message")
        session = _columns(conn, "session")
        updated = _first(part, "time_updated", "updated_at")
        created = _first(part, "time_created", "created_at") or updated
        if not {"id", "data", "message_id", "session_id"} <= part or updated is None:
            raise UrchinError(f"{path} has no usable part table; this OpenCode version is unknown")
        if not {"id", "data"} <= message:
            raise UrchinError(
                f"{path} has no usable message table; this OpenCode version is unknown"
            )

        def session_col(name: str) -> str:
            return f"s.{name}" if name in session else "NULL"

        # Every interpolated name is one of the literal column names above.
        columns = (
            f"p.id, p.session_id, p.{created}, p.{updated}, p.data, m.data, "
            f"{session_col('directory')}, {session_col('title')}, {session_col('time_archived')}"
        )
        joins = "LEFT JOIN message AS m ON m.id = p.message_id "
        if "id" in session:
            joins += "LEFT JOIN session AS s ON s.id = p.session_id "
        select = f"SELECT {columns} FROM part AS p {joins}"  # noqa: S608
        return cls(conn, select, updated)

    def parts(self, since: int | None, extra_ids: list[str]) -> Iterator[_Part]:
        """Parts updated at or after ``since`` (all when None), then those in ``extra_ids``."""
        # Sorting only (id, time) keeps the sort small; the wide rows follow by id.
        # ``self.updated`` is a literal column name chosen in inspect().
        order = f"ORDER BY {self.updated}, id"
        if since is None:
            ids_sql = f"SELECT id FROM part {order}"  # noqa: S608
            args: tuple[int, ...] = ()
        else:
            ids_sql = f"SELECT id FROM part WHERE {self.updated} >= ? {order}"  # noqa: S608
            args = (since,)
        ids = [row[0] for row in self.conn.execute(ids_sql, args)]
        known = set(ids)
        ids += [pid for pid in extra_ids if pid not in known]
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"{self.select} WHERE p.id IN ({marks}) ORDER BY p.{self.updated}, p.id", chunk
            )
            for row in rows:
                yield _Part(
                    id=str(row[0]),
                    session_id=str(row[1] or ""),
                    time_created=as_int(row[2]) or 0,
                    time_updated=as_int(row[3]) or 0,
                    data=_loads(row[4]),
                    message=_loads(row[5]),
                    directory=as_str(row[6]),
                    title=as_str(row[7]),
                    archived=row[8] is not None and row[8] != 0,
                )


# -- deciding what a part means ------------------------------------------------------------


def _judge(part: _Part, now: int) -> _Verdict:
    """Whether a part is final yet, and the event it stands for."""
    data = part.data
    if not isinstance(data, dict):
        return _IGNORE  # invalid JSON in the row: counted by the caller, never fatal
    if part.archived:
        return _IGNORE
    match data.get("type"):
        case "text":
            return _judge_text(part, data, now)
        case "tool":
            return _judge_tool(part, data, stale=now - part.time_updated >= _STALE_MS)
        case _:
            return _IGNORE


def _judge_text(part: _Part, data: dict[str, Any], now: int) -> _Verdict:
    if data.get("synthetic") or data.get("ignored"):
        return _IGNORE
    message = part.message if isinstance(part.message, dict) else None
    if message is None:
        return _WAIT  # the message row is not visible yet
    text = as_str(data.get("text")) or ""
    role = message.get("role")
    if role == "user":
        final_at: int | None = part.time_created
        kind = EventKind.CONVERSATION
    elif role == "assistant":
        final_at = as_int(dig(data, "time", "end")) or as_int(dig(message, "time", "completed"))
        finished = final_at is not None or message.get("error") is not None
        if not finished and now - part.time_updated < _QUIET_MS:
            return _WAIT
        kind = EventKind.AGENT
    else:
        return _IGNORE
    if not text.strip():
        return _IGNORE
    return _Verdict("emit", _event(part, kind, text, part.time_created), final_at)


def _judge_tool(part: _Part, data: dict[str, Any], *, stale: bool) -> _Verdict:
    if data.get("tool") not in _SHELL_TOOLS:
        return _IGNORE
    state = as_dict(data.get("state"))
    status = state.get("status")
    finished = status in ("completed", "error")
    if not finished and not stale:
        return _WAIT
    command = as_str(dig(state, "input", "command"))
    if command is None:
        return _IGNORE
    started = as_int(dig(state, "time", "start")) or part.time_created
    # A call a day past its last update will not finish: keep what is known of it.
    tags = ("error",) if status == "error" else () if finished else ("unfinished",)
    event = _event(part, EventKind.COMMAND, command, started, tags)
    return _Verdict("emit", event, as_int(dig(state, "time", "end")))


def _decided_earlier(
    verdict: _Verdict, part_id: str, prior_wm: int | None, was_pending: Mapping[str, int]
) -> bool:
    """A part that was final long before the last watermark was handled back then."""
    if prior_wm is None or verdict.final_at is None or part_id in was_pending:
        return False
    return verdict.final_at + 2 * _WINDOW_MS <= prior_wm


def _event(
    part: _Part, kind: EventKind, content: str, at_ms: int, tags: tuple[str, ...] = ()
) -> Event:
    return Event.create(
        clip(content, _MAX_CONTENT),
        SOURCE,
        kind,
        timestamp=from_epoch_ms(at_ms) or datetime.now(UTC),
        event_id=stable_id(SOURCE, part.id),
        workspace=part.directory,
        session=part.session_id or None,
        title=part.title,
        tags=tags,
    )


# -- small helpers ----------------------------------------------------------------------------


def _prune_done(done: dict[str, int], watermark: int | None) -> dict[str, int]:
    if watermark is None:
        return done
    floor = watermark - 3 * _WINDOW_MS
    return {pid: tu for pid, tu in done.items() if tu >= floor}


def _legacy_part_ids(storage: object) -> frozenset[str]:
    if not isinstance(storage, dict):
        return frozenset()
    return frozenset(Path(rel).stem for rel in storage if isinstance(rel, str))


def _legacy_part_files(root: Path) -> Iterable[Path]:
    parts = root / "part"
    with contextlib.suppress(OSError):
        for folder in sorted(parts.iterdir()):
            if folder.is_dir():
                yield from sorted(folder.glob("*.json"))


def _legacy_session(root: Path, session_id: str) -> tuple[str | None, str | None, bool]:
    if session_id:
        with contextlib.suppress(OSError):
            for path in (root / "session").glob(f"*/{session_id}.json"):
                info = _load_json(path)
                if isinstance(info, dict):
                    archived = dig(info, "time", "archived") is not None
                    return as_str(info.get("directory")), as_str(info.get("title")), archived
    return None, None, False


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def _first(columns: set[str], *names: str) -> str | None:
    return next((name for name in names if name in columns), None)


def _loads(raw: object) -> Any:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _load_json(path: Path) -> Any:
    try:
        return _loads(path.read_bytes())
    except OSError:
        return None


def _int_map(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int)}
