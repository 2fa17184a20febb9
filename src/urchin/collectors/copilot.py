"""GitHub Copilot CLI: session event logs and the prompt history.

Copilot keeps its state in ``$COPILOT_HOME`` (default ``~/.copilot``):

* ``session-state/<id>/events.jsonl`` (older builds: ``session-state/<id>.jsonl``)
  is an append-only log of typed events. Each file is tailed from its own byte
  checkpoint (see :mod:`urchin.collectors.tail`). ``session.start`` gives the
  session id and working folder (``workspace.yaml`` beside the log is the
  fallback); ``user.message`` → ``conversation``; ``assistant.message`` with text
  → ``agent``; a ``user.message`` carrying ``agentId`` (one agent instructing a
  subagent) → ``agent`` titled ``subagent prompt``; ``tool.execution_start`` of
  the shell tool → ``command``, of an edit/create tool → ``file``, of anything
  else → ``agent`` titled ``tool: <name>``. Other types (turn markers, tool
  results, model changes, types added by later versions) are skipped. Event ids
  derive from each record's ``id``; a bounded window of emitted ids in the
  checkpoint keeps a replaced or truncated log from repeating events when it is
  re-read from the start.
* ``command-history-state.json`` is ``{"commandHistory": [newest, …]}``, rewritten
  whole on every prompt, with no timestamps. Entries are remembered by content
  hash (the newest :data:`HISTORY_LIMIT`); an entry not remembered becomes a
  ``conversation`` event stamped with the time it was read. Typing an old prompt
  again is therefore invisible, and slash commands such as ``/login`` are skipped.
  A prompt already recorded from a session log is not recorded again from the
  history. A file that does not parse (caught mid-write) is left for the next run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin import paths
from urchin.collectors.base import AgentFolderCollector, CollectorRun, stable_id
from urchin.collectors.tail import record_key
from urchin.collectors.transcript import (
    JsonlTail,
    PromptMatcher,
    RecentKeys,
    Tally,
    as_dict,
    as_str,
    clip,
    epoch_ms,
    listing,
    optional_timestamp,
    put,
    slash_command,
    tool_summary,
)
from urchin.event import Event, EventKind

__all__ = [
    "HISTORY_LIMIT",
    "SOURCE",
    "CopilotCollector",
    "Item",
    "default_root",
    "parse_workspace_yaml",
    "session_item",
]

log = logging.getLogger(__name__)

SOURCE = "copilot"
#: How many prompt hashes of the command history the checkpoint remembers.
HISTORY_LIMIT = 2000
#: A command history larger than this is not read.
_MAX_HISTORY_BYTES = 4 * 1024 * 1024
_MAX_YAML_BYTES = 64 * 1024
_SHELL_TOOLS = frozenset({"bash", "shell", "powershell", "pwsh"})
_FILE_TOOLS = frozenset({"edit", "create", "write", "str_replace", "apply_patch"})
# Bookkeeping calls the agent makes on every turn; they say nothing about the work.
_QUIET_TOOLS = frozenset({"report_intent"})
_SUMMARY_FIELDS = ("path", "file_path", "pattern", "query", "url", "description", "prompt")


def default_root(env: Mapping[str, str] | None = None) -> Path:
    """``$COPILOT_HOME``, default ``~/.copilot``."""
    return paths.tool_home(env, "COPILOT_HOME", ".copilot")


@dataclass(frozen=True, slots=True)
class Item:
    """One event-to-be from a session log record."""

    kind: EventKind
    content: str
    title: str | None = None
    prompt: bool = False


def _arguments(value: object) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _tool_item(data: Mapping[str, Any]) -> Item | None:
    name = data.get("toolName")
    if not isinstance(name, str) or not name or name in _QUIET_TOOLS:
        return None
    args = _arguments(data.get("arguments"))
    title = f"tool: {name}"
    if name in _SHELL_TOOLS:
        command = args.get("command")
        if isinstance(command, str) and command.strip():
            return Item(EventKind.COMMAND, clip(command), title)
    if name in _FILE_TOOLS:
        target = args.get("path") or args.get("file_path")
        if isinstance(target, str) and target.strip():
            return Item(EventKind.FILE, clip(target), title)
    return Item(EventKind.AGENT, tool_summary(name, args, _SUMMARY_FIELDS), title)


def session_item(record: object) -> Item | None:
    """The event one session-log record yields, or None for records that yield none."""
    if not isinstance(record, dict):
        return None
    data = record.get("data")
    if not isinstance(data, dict):
        return None
    match record.get("type"):
        case "user.message":
            text = as_str(data.get("content"))
            if text is None or slash_command(text) is not None:
                return None
            if as_str(data.get("agentId")) or as_str(record.get("agentId")):
                # Instructions one agent writes to a subagent, not the person's words.
                return Item(EventKind.AGENT, clip(text), "subagent prompt")
            return Item(EventKind.CONVERSATION, clip(text), prompt=True)
        case "assistant.message":
            text = as_str(data.get("content"))
            return None if text is None else Item(EventKind.AGENT, clip(text))
        case "tool.execution_start":
            return _tool_item(data)
        case _:
            return None


def parse_workspace_yaml(text: str) -> dict[str, str]:
    """Top-level ``key: value`` pairs of a ``workspace.yaml``; nested or odd lines are ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if key.strip() and value:
            out[key.strip()] = value
    return out


def _start_info(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """Session id and working folder from a ``session.start`` record's data."""
    context = data.get("context")
    cwd = context.get("cwd") if isinstance(context, dict) else None
    if not isinstance(cwd, str):
        cwd = data.get("cwd")
    session = data.get("sessionId")
    return (
        session if isinstance(session, str) and session else None,
        cwd if isinstance(cwd, str) and cwd else None,
    )


class CopilotCollector(AgentFolderCollector):
    """Reads Copilot CLI session logs and ``command-history-state.json``."""

    name = "copilot"
    default_root = staticmethod(default_root)

    @property
    def history(self) -> Path:
        return self.root / "command-history-state.json"

    @property
    def sessions(self) -> Path:
        return self.root / "session-state"

    def available(self) -> bool:
        return self.history.is_file() or self.sessions.is_dir()

    def collect(self, run: CollectorRun) -> None:
        """Emit new session-log records and history prompts, then save the checkpoint.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        saved = as_dict(run.state.get("files"))
        seen = RecentKeys(run.state.get("seen"))
        prompts = PromptMatcher(run.state.get("prompts"))
        tally = Tally()
        logs, listing_failed = self._logs(run)
        files: dict[str, Any] = dict(saved) if listing_failed else {}
        for path in logs:
            entry = self._read_log(run, path, saved.get(str(path)), seen, prompts, tally)
            put(files, str(path), entry)
        history = self._read_history(run, run.state.get("history"), prompts)
        tally.report(run, "logs")
        state: dict[str, Any] = {
            "version": 1,
            "files": files,
            "seen": seen.to_json(),
            "prompts": prompts.to_json(),
            "history": history,
        }
        if run.result.new or any(run.state.get(k) != v for k, v in state.items()):
            run.save(state)

    # -- session logs -------------------------------------------------------------------

    def _logs(self, run: CollectorRun) -> tuple[list[Path], bool]:
        """Every session event log, and whether some folder could not be listed."""
        found: list[Path] = []
        entries = listing(self.sessions, run)
        for entry in entries:
            if entry is None:
                return [], True
            if entry.name.endswith(".jsonl") and entry.is_file():
                found.append(Path(entry.path))
            elif entry.is_dir():
                candidate = Path(entry.path) / "events.jsonl"
                if candidate.is_file():
                    found.append(candidate)
        return found, False

    def _workspace_fallback(self, path: Path) -> str | None:
        """``cwd`` (or ``git_root``) from the ``workspace.yaml`` beside an ``events.jsonl``."""
        if path.name != "events.jsonl":
            return None
        try:
            with open(path.parent / "workspace.yaml", encoding="utf-8", errors="replace") as f:
                fields = parse_workspace_yaml(f.read(_MAX_YAML_BYTES))
        except OSError:
            return None
        return fields.get("cwd") or fields.get("git_root")

    def _read_log(
        self,
        run: CollectorRun,
        path: Path,
        previous: object,
        seen: RecentKeys,
        prompts: PromptMatcher,
        tally: Tally,
    ) -> object:
        """Emit one log's new records; returns its checkpoint entry (None: file gone)."""
        tail = JsonlTail(path, previous, tally, max_line_bytes=self.max_line_bytes)
        session = as_str(tail.prior.get("session"))
        session = session or (path.parent.name if path.name == "events.jsonl" else path.stem)
        cwd = as_str(tail.prior.get("cwd"))
        if tail.unchanged():
            return previous
        fallback_looked = False
        for line, record in tail.records():
            if not isinstance(record, dict):
                tally.malformed += 1
                continue
            when = optional_timestamp(record.get("timestamp"))
            if when is not None:
                tail.saw(epoch_ms(when))
            data = record.get("data")
            if record.get("type") == "session.start" and isinstance(data, dict):
                started, folder = _start_info(data)
                session, cwd = started or session, folder or cwd
            if cwd is None and not fallback_looked:
                cwd, fallback_looked = self._workspace_fallback(path), True
            event = self._event(record, line, when, tail.floor, session, cwd, seen, prompts)
            if event is None:
                run.skip()
                continue
            run.add(event)
        return tail.entry(run, session=session, cwd=cwd)

    def _event(
        self,
        record: dict[str, Any],
        line: bytes,
        when: datetime | None,
        floor: int | None,
        session: str,
        cwd: str | None,
        seen: RecentKeys,
        prompts: PromptMatcher,
    ) -> Event | None:
        item = session_item(record)
        if item is None:
            return None
        record_id = as_str(record.get("id"))
        # Records without an id (older builds) are recognised by their bytes instead.
        if record_id is not None:
            key = record_id
        else:
            key = "line/" + record_key(None, line.decode("utf-8", "replace"))
        moment = when or datetime.now(UTC)
        if (floor is not None and epoch_ms(moment) < floor) or not seen.first_time(key):
            return None
        if item.prompt and prompts.seen_elsewhere("s", item.content, epoch_ms(moment)):
            return None
        return Event.create(
            item.content,
            SOURCE,
            item.kind,
            timestamp=moment,
            event_id=stable_id(SOURCE, key),
            workspace=cwd,
            session=session,
            title=item.title,
        )

    # -- command history ------------------------------------------------------------------

    def _read_history(self, run: CollectorRun, previous: object, prompts: PromptMatcher) -> object:
        """Emit prompts the history gained; returns the history checkpoint (a hash list)."""
        known = RecentKeys(previous, HISTORY_LIMIT)
        try:
            if self.history.stat().st_size > _MAX_HISTORY_BYTES:
                run.error(f"{self.history} is larger than {_MAX_HISTORY_BYTES} bytes; skipped")
                return previous
            raw = self.history.read_bytes()
        except FileNotFoundError:
            return previous
        except OSError as exc:
            run.error(f"cannot read {self.history}: {exc.strerror or type(exc).__name__}")
            return previous
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            # Copilot rewrites the file in place; we may have caught it half written.
            log.warning("copilot: %s is not valid JSON now; trying again next run", self.history)
            return previous
        entries = data.get("commandHistory") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            log.warning("copilot: %s has no commandHistory list; trying again", self.history)
            return previous
        # Every entry still in the file must stay remembered, or it would come back.
        known.limit = max(HISTORY_LIMIT, len(entries))
        now = datetime.now(UTC)
        for entry in reversed(entries):  # the file lists the newest first
            if not isinstance(entry, str) or not entry.strip():
                continue
            text = entry.strip()
            key = f"prompt/{text}"
            if key in known:
                known.add(key)  # still in the file: keep it among the remembered
                continue
            known.add(key)
            content = clip(text)
            if slash_command(text) is not None or prompts.seen_elsewhere(
                "h", content, epoch_ms(now), window_ms=None
            ):
                run.skip()
                continue
            run.add(
                Event.create(
                    content,
                    SOURCE,
                    EventKind.CONVERSATION,
                    timestamp=now,
                    event_id=stable_id(SOURCE, "history", text),
                )
            )
        return known.to_json()
