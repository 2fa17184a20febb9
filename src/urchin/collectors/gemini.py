"""Gemini CLI: chat recordings and the prompt log under ``~/.gemini/tmp/<project>/``.

The Gemini folder is ``$GEMINI_CLI_HOME/.gemini`` (default ``~/.gemini``); each
project has ``tmp/<id>/``, where ``<id>`` is a slug of the project's name (newer
versions) or the hex SHA-256 of its root (older ones). The project root comes
from the ``.project_root`` marker in that folder, else from ``projects.json``,
else from the session's ``directories``.

Chats (``chats/session-*.jsonl``; subagents in ``chats/<parent>/<id>.jsonl``) are
tailed from a byte checkpoint per file (see :mod:`urchin.collectors.tail`). Line
1 is metadata; then message records are *upserts* keyed by ``id`` (the same
message is appended again when its tool calls or tokens change), ``{"$set": …}``
updates metadata (a ``messages`` array replaces the list), and ``{"$rewindTo":
id}`` drops that message and everything after it.

The lines read in one run are folded in order (last copy wins, ``$set`` and
``$rewindTo`` applied), then turned into events:

* a user message → ``conversation`` (``agent`` in a subagent chat);
* a model message's text → ``agent``, once, when first seen with text;
* each tool call → ``command`` for ``run_shell_command``, ``file`` for edits and
  writes, ``agent`` titled ``tool: <name>`` otherwise, once it has finished
  (cancelled calls are skipped; a call still running is picked up from the copy
  of its message that records the result).

Event ids derive from ``(sessionId, message id, part)``, so later copies of a
message, a re-read file, or a session migrated from ``.json`` to ``.jsonl`` do not
repeat events; a bounded window of emitted ids in the checkpoint drops them.
The journal is append-only: a message rewound away *after* it was recorded stays
recorded, while one rewound before it was read is never recorded. Messages that
appear only inside a ``$set`` list (summaries, masked copies) are not recorded.

The legacy ``chats/*.json`` form (one ``ConversationRecord``, rewritten whole)
is read again when its size or mtime changes and deduplicated the same way; it
is skipped when its ``.jsonl`` successor exists. ``logs.json`` (every prompt,
rewritten whole) is read the same way with the highest ``messageId`` per session
as its checkpoint; a prompt already recorded from a chat is not recorded twice.
A JSON file that does not parse (caught mid-write) is retried on the next run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin import paths
from urchin.collectors.base import AgentFolderCollector, CollectorRun, stable_id
from urchin.collectors.transcript import (
    JsonlTail,
    PromptMatcher,
    RecentKeys,
    Tally,
    as_dict,
    as_int,
    as_list,
    as_str,
    clip,
    epoch_ms,
    keep_under,
    listing,
    optional_timestamp,
    put,
    slash_command,
    tool_summary,
)
from urchin.event import Event, EventKind

__all__ = [
    "SOURCE",
    "ChatMessage",
    "GeminiCollector",
    "ToolCall",
    "chat_message",
    "default_root",
]

log = logging.getLogger(__name__)

SOURCE = "gemini"
#: Longer chat lines are skipped without being held in memory.
#: Whole-file JSON (legacy chats, logs.json) larger than this is not read.
MAX_JSON_BYTES = 64 * 1024 * 1024
_SHELL_TOOLS = frozenset({"run_shell_command"})
_FILE_TOOLS = frozenset({"write_file", "replace", "edit"})
_DONE = frozenset({"success", "error"})
_PENDING = frozenset({"validating", "scheduled", "executing", "awaiting_approval"})
_SUMMARY_FIELDS = (
    "file_path",
    "absolute_path",
    "dir_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
)
# gemini-cli's own markers around the text of @file references it adds to a prompt.
_REFERENCED = "--- Content from referenced files ---"


def default_root(env: Mapping[str, str] | None = None) -> Path:
    """``$GEMINI_CLI_HOME/.gemini``, default ``~/.gemini``."""
    env = os.environ if env is None else env
    explicit = env.get("GEMINI_CLI_HOME")
    home = Path(explicit).expanduser() if explicit else paths.home_dir(env)
    return home / ".gemini"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a chat records about one tool call, reduced to what an event needs."""

    id: str
    kind: EventKind
    content: str
    title: str
    status: str | None
    when: datetime | None


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One chat message, reduced to what events need (text capped, tool input summarised)."""

    id: str
    type: str
    text: str
    when: datetime | None
    tools: tuple[ToolCall, ...] = ()


def _parts_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    return "".join(
        part["text"]
        for part in as_list(content)
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    )


def _typed_words(content: object) -> str:
    """A user message's text without the files its ``@path`` references pulled in.

    gemini-cli appends each referenced file after a ``--- Content from referenced
    files ---`` marker; the person's words are what comes before it.
    """
    text = _parts_text(content)
    cut = text.find(_REFERENCED)
    return text if cut < 0 else text[:cut]


def _tool_call(raw: object, index: int) -> ToolCall | None:
    if not isinstance(raw, dict):
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return None
    raw_id, raw_args, raw_status = raw.get("id"), raw.get("args"), raw.get("status")
    call_id = raw_id if isinstance(raw_id, str) and raw_id else str(index)
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    status = raw_status if isinstance(raw_status, str) else None
    when = optional_timestamp(raw.get("timestamp"))
    title = f"tool: {name}"
    if name in _SHELL_TOOLS and isinstance(args.get("command"), str) and args["command"].strip():
        return ToolCall(call_id, EventKind.COMMAND, clip(args["command"]), title, status, when)
    target = args.get("file_path") or args.get("absolute_path")
    if name in _FILE_TOOLS and isinstance(target, str) and target.strip():
        return ToolCall(call_id, EventKind.FILE, clip(target), title, status, when)
    content = tool_summary(name, args, _SUMMARY_FIELDS)
    return ToolCall(call_id, EventKind.AGENT, content, title, status, when)


def chat_message(record: object) -> ChatMessage | None:
    """A message record reduced to a :class:`ChatMessage`; None if it is not a message."""
    if not isinstance(record, dict):
        return None
    message_id = record.get("id")
    kind = record.get("type")
    if not isinstance(message_id, str) or not message_id or not isinstance(kind, str):
        return None
    source = record.get("content")
    if kind == "user" and record.get("displayContent"):
        # What the person typed, before @file references were expanded into it.
        source = record["displayContent"]
    text = _typed_words(source) if kind == "user" else _parts_text(source)
    calls = record.get("toolCalls") if kind == "gemini" else None
    tools = tuple(
        call
        for index, raw in enumerate(calls if isinstance(calls, list) else [])
        if (call := _tool_call(raw, index)) is not None
    )
    return ChatMessage(
        message_id,
        kind,
        clip(text),
        optional_timestamp(record.get("timestamp")),
        tools,
    )


@dataclass
class _Chat:
    """One chat file's metadata and the messages folded from the lines read this run."""

    session: str
    directories: list[str] = field(default_factory=list)
    subagent: bool = False
    messages: dict[str, ChatMessage] = field(default_factory=dict)
    rewound: int = 0

    def apply(self, record: object) -> bool:
        """Fold one record in; False when it is not a record this format defines."""
        if not isinstance(record, dict):
            return False
        target = record.get("$rewindTo")
        if isinstance(target, str):
            self._rewind(target)
            return True
        update = record.get("$set")
        if isinstance(update, dict):
            self._metadata(update)
            listed = update.get("messages")
            if isinstance(listed, list):
                self._replace(listed)
            return True
        message = chat_message(record)
        if message is not None:
            self.messages[message.id] = message
            return True
        if isinstance(record.get("sessionId"), str):
            self._metadata(record)
            return True
        return False

    def _metadata(self, values: Mapping[str, Any]) -> None:
        session = values.get("sessionId")
        if isinstance(session, str) and session:
            self.session = session
        folders = values.get("directories")
        if isinstance(folders, list):
            self.directories = [d for d in folders if isinstance(d, str) and d]
        if values.get("kind") == "subagent":
            self.subagent = True

    def _rewind(self, target: str) -> None:
        # Messages before the target were read in an earlier run (or it is unknown,
        # which Gemini treats as "rewind everything"): all messages held now go.
        ids = list(self.messages)
        cut = ids.index(target) if target in self.messages else 0
        for message_id in ids[cut:]:
            del self.messages[message_id]
            self.rewound += 1

    def _replace(self, listed: list[Any]) -> None:
        # Only messages already recorded on their own lines are real; ones that exist
        # only in the list (compression summaries) are not.
        fresh: dict[str, ChatMessage] = {}
        for raw in listed:
            message = chat_message(raw)
            if message is not None and message.id in self.messages:
                fresh[message.id] = message
        self.rewound += len(self.messages) - len(fresh)
        self.messages = fresh


@dataclass
class _Context:
    """What one run shares across files: dedup windows and counters."""

    run: CollectorRun
    seen: RecentKeys
    prompts: PromptMatcher
    tally: Tally = field(default_factory=Tally)


class GeminiCollector(AgentFolderCollector):
    """Reads Gemini CLI chats (JSONL and legacy JSON) and ``logs.json`` per project."""

    name = "gemini"
    default_root = staticmethod(default_root)

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def available(self) -> bool:
        return self.tmp.is_dir()

    def collect(self, run: CollectorRun) -> None:
        """Emit new chat messages and prompts, then save the checkpoint.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        ctx = _Context(
            run,
            RecentKeys(run.state.get("seen")),
            PromptMatcher(run.state.get("prompts")),
        )
        saved_files = as_dict(run.state.get("files"))
        saved_legacy = as_dict(run.state.get("legacy"))
        saved_logs = as_dict(run.state.get("logs"))
        projects, failed = _list_dirs(self.tmp, run)
        files: dict[str, Any] = dict(saved_files) if failed else {}
        legacy: dict[str, Any] = dict(saved_legacy) if failed else {}
        logs: dict[str, Any] = dict(saved_logs) if failed else {}
        registry = self._registry()
        roots = {project: self._project_root(project, registry) for project in projects}
        for project in projects:
            chats = project / "chats"
            main, subfolders, chats_failed = _chat_files(chats, run)
            if chats_failed:
                keep_under(files, saved_files, chats)
                keep_under(legacy, saved_legacy, chats)
            for path, subagent in main + subfolders:
                if path.suffix == ".json":
                    if path.with_suffix(".jsonl").exists():
                        continue
                    entry = self._read_legacy(
                        ctx, path, saved_legacy.get(str(path)), roots[project]
                    )
                    put(legacy, str(path), entry)
                else:
                    entry = self._read_chat(
                        ctx, path, saved_files.get(str(path)), roots[project], subagent
                    )
                    put(files, str(path), entry)
        for project in projects:
            path = project / "logs.json"
            if path.is_file():
                put(
                    logs,
                    str(path),
                    self._read_logs(ctx, path, saved_logs.get(str(path)), roots[project]),
                )
        ctx.tally.report(run, "chats")
        state: dict[str, Any] = {
            "version": 1,
            "files": files,
            "legacy": legacy,
            "logs": logs,
            "seen": ctx.seen.to_json(),
            "prompts": ctx.prompts.to_json(),
        }
        if run.result.new or any(run.state.get(k) != v for k, v in state.items()):
            run.save(state)

    # -- project roots --------------------------------------------------------------------

    def _registry(self) -> dict[str, str]:
        """``projects.json`` inverted: project folder id (slug or path hash) → project root."""
        try:
            with open(self.root / "projects.json", "rb") as handle:
                data = json.loads(handle.read(4 * 1024 * 1024))
        except (OSError, ValueError, RecursionError):
            return {}
        mapping = data.get("projects") if isinstance(data, dict) else None
        out: dict[str, str] = {}
        for root, slug in mapping.items() if isinstance(mapping, dict) else ():
            if isinstance(root, str) and isinstance(slug, str):
                out[slug] = root
                out[hashlib.sha256(root.encode("utf-8")).hexdigest()] = root
        return out

    def _project_root(self, project: Path, registry: Mapping[str, str]) -> str | None:
        try:
            with open(project / ".project_root", encoding="utf-8", errors="replace") as handle:
                marker = handle.read(4096).strip()
        except OSError:
            marker = ""
        return marker or registry.get(project.name)

    # -- events -------------------------------------------------------------------------

    def _events(
        self, ctx: _Context, chat: _Chat, workspace: str | None, floor: int | None
    ) -> Iterable[Event]:
        """Events for the messages folded from one read, skipping any already recorded."""
        workspace = workspace or (chat.directories[0] if chat.directories else None)
        for message in chat.messages.values():
            parts = _parts(message, chat.subagent)
            if not parts and not any(call.status in _PENDING for call in message.tools):
                ctx.run.skip()  # info, warnings, empty turns, cancelled calls
            for part in parts:
                key = f"{chat.session}/{message.id}{part.suffix}"
                moment = part.when or datetime.now(UTC)
                if (floor is not None and epoch_ms(moment) < floor) or not ctx.seen.first_time(key):
                    ctx.run.skip()
                    continue
                if part.prompt and ctx.prompts.seen_elsewhere("c", part.content, epoch_ms(moment)):
                    ctx.run.skip()
                    continue
                yield Event.create(
                    part.content,
                    SOURCE,
                    part.kind,
                    timestamp=moment,
                    event_id=stable_id(SOURCE, key),
                    workspace=workspace,
                    session=chat.session,
                    title=part.title,
                )

    # -- JSONL chats ----------------------------------------------------------------------

    def _read_chat(
        self, ctx: _Context, path: Path, previous: object, workspace: str | None, subagent: bool
    ) -> object:
        """Emit one chat's new messages; returns its checkpoint entry (None: file gone)."""
        tail = JsonlTail(path, previous, ctx.tally, max_line_bytes=self.max_line_bytes)
        if tail.unchanged():
            return previous
        prior = tail.prior
        chat = _Chat(
            as_str(prior.get("session")) or path.stem,
            [d for d in as_list(prior.get("directories")) if isinstance(d, str)],
            subagent or prior.get("subagent") is True,
        )
        for _, record in tail.records():
            if not chat.apply(record):
                ctx.run.skip()
        entry = tail.entry(ctx.run)
        if not isinstance(entry, dict) or entry is previous:
            return entry  # gone, or unreadable: keep the old place
        ctx.run.skip(chat.rewound)
        self._emit(ctx, self._events(ctx, chat, workspace, tail.floor))
        for message in chat.messages.values():
            if message.when is not None:
                tail.saw(epoch_ms(message.when))
        entry.update(session=chat.session, subagent=chat.subagent)
        if chat.directories:
            entry["directories"] = chat.directories
        if tail.last_ms is not None:
            entry["last_ms"] = tail.last_ms
        return entry

    def _emit(self, ctx: _Context, events: Iterable[Event]) -> None:
        for event in events:
            ctx.run.add(event)

    # -- whole-file JSON --------------------------------------------------------------------

    def _load_json(
        self, ctx: _Context, path: Path, prior: Mapping[str, Any]
    ) -> tuple[Any, dict[str, int]] | None:
        """The parsed file and its stat stamp; None when unchanged, unreadable or mid-write."""
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            ctx.run.error(f"cannot read {path}: {exc.strerror or type(exc).__name__}")
            return None
        stamp = {"mtime_ns": info.st_mtime_ns, "size": info.st_size}
        if all(prior.get(k) == v for k, v in stamp.items()):
            return None
        if info.st_size > MAX_JSON_BYTES:
            ctx.run.error(f"{path} is larger than {MAX_JSON_BYTES} bytes; skipped")
            return None
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read(MAX_JSON_BYTES + 1))
        except FileNotFoundError:
            return None
        except OSError as exc:
            ctx.run.error(f"cannot read {path}: {exc.strerror or type(exc).__name__}")
            return None
        except (ValueError, RecursionError):
            # Gemini rewrites these files in place: we may have caught one half written.
            log.warning("gemini: %s is not valid JSON now; trying again next run", path)
            return None
        return data, stamp

    def _read_legacy(
        self, ctx: _Context, path: Path, previous: object, workspace: str | None
    ) -> object:
        """Emit messages of a legacy ``.json`` chat not recorded before."""
        prior = as_dict(previous)
        loaded = self._load_json(ctx, path, prior)
        if loaded is None:
            return previous if path.exists() else None
        data, stamp = loaded
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            ctx.tally.malformed += 1
            return {**prior, **stamp}
        last_ms = as_int(prior.get("last_ms"))
        chat = _Chat(path.stem)
        chat.apply({k: v for k, v in data.items() if k != "messages"})
        for raw in data["messages"]:
            if chat_message(raw) is not None:
                chat.apply(raw)
        # The file is rewritten whole; what is older than the newest message read is known.
        self._emit(ctx, self._events(ctx, chat, workspace, last_ms))
        for message in chat.messages.values():
            if message.when is not None:
                last_ms = max(last_ms or 0, epoch_ms(message.when))
        out: dict[str, Any] = {**stamp}
        if last_ms is not None:
            out["last_ms"] = last_ms
        return out

    def _read_logs(
        self, ctx: _Context, path: Path, previous: object, workspace: str | None
    ) -> object:
        """Emit prompts of ``logs.json`` above each session's highest ``messageId`` read."""
        prior = as_dict(previous)
        loaded = self._load_json(ctx, path, prior)
        if loaded is None:
            return previous
        data, stamp = loaded
        if not isinstance(data, list):
            ctx.tally.malformed += 1
            return {**prior, **stamp}
        saved = as_dict(prior.get("sessions"))
        highest: dict[str, int] = {}
        for entry in data:
            if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
                number = as_int(entry.get("messageId"))
                if number is not None:
                    sid = entry["sessionId"]
                    highest[sid] = max(highest.get(sid, number), number)
        sessions: dict[str, list[int]] = {}
        events: list[Event] = []
        for entry in data:
            prompt = _log_prompt(entry)
            if prompt is None:
                ctx.run.skip()
                continue
            sid, number, when, text = prompt
            top, last = _pair(saved.get(sid)) or (-1, 0)
            # A file that was reset (corrupt, renamed away) numbers a session from 0 again.
            reset = highest.get(sid, -1) < top
            new = (when is not None and epoch_ms(when) > last) if reset else number > top
            kept = sessions.setdefault(sid, [top, last])
            kept[0] = max(kept[0], number)
            if when is not None:
                kept[1] = max(kept[1], epoch_ms(when))
            if not new:
                continue
            moment = when or datetime.now(UTC)
            content = clip(text)
            if slash_command(content, "/?") is not None or ctx.prompts.seen_elsewhere(
                "l", content, epoch_ms(moment)
            ):
                ctx.run.skip()
                continue
            events.append(
                Event.create(
                    content,
                    SOURCE,
                    EventKind.CONVERSATION,
                    timestamp=moment,
                    event_id=stable_id(SOURCE, "log", sid, str(number), text),
                    workspace=workspace,
                    session=sid,
                )
            )
        self._emit(ctx, events)
        return {**stamp, "sessions": sessions}


@dataclass(frozen=True, slots=True)
class _Part:
    """One event-to-be of a message: its text, a tool call's outcome."""

    suffix: str
    kind: EventKind
    content: str
    title: str | None
    when: datetime | None
    prompt: bool = False


def _parts(message: ChatMessage, subagent: bool) -> list[_Part]:
    """What of a message becomes events now; calls still running wait for a later copy."""
    if message.type == "user" and message.text:
        if subagent:
            return [_Part("", EventKind.AGENT, message.text, "subagent prompt", message.when)]
        return [_Part("", EventKind.CONVERSATION, message.text, None, message.when, prompt=True)]
    if message.type != "gemini":
        return []
    parts: list[_Part] = []
    if message.text:
        parts.append(_Part("/text", EventKind.AGENT, message.text, None, message.when))
    for call in message.tools:
        if call.status is None or call.status in _DONE:
            when = call.when or message.when
            parts.append(_Part(f"/tool/{call.id}", call.kind, call.content, call.title, when))
    return parts


def _log_prompt(entry: object) -> tuple[str, int, datetime | None, str] | None:
    if not isinstance(entry, dict) or entry.get("type", "user") != "user":
        return None
    sid, number, text = entry.get("sessionId"), as_int(entry.get("messageId")), entry.get("message")
    if not isinstance(sid, str) or number is None or not isinstance(text, str) or not text.strip():
        return None
    return sid, number, optional_timestamp(entry.get("timestamp")), text.strip()


def _pair(value: object) -> tuple[int, int] | None:
    """A saved ``[highest messageId, newest epoch ms]`` pair, or None if it is not one."""
    if isinstance(value, list) and len(value) == 2:
        top, last = as_int(value[0]), as_int(value[1])
        if top is not None and last is not None:
            return top, last
    return None


def _list_dirs(folder: Path, run: CollectorRun) -> tuple[list[Path], bool]:
    entries = listing(folder, run)
    if None in entries:
        return [], True
    return [Path(e.path) for e in entries if e is not None and e.is_dir()], False


def _chat_files(
    chats: Path, run: CollectorRun
) -> tuple[list[tuple[Path, bool]], list[tuple[Path, bool]], bool]:
    """Main chat files, subagent chat files, and whether some folder could not be listed."""
    main: list[tuple[Path, bool]] = []
    subs: list[tuple[Path, bool]] = []
    entries = listing(chats, run)
    if None in entries:
        return [], [], True
    failed = False
    for entry in entries:
        assert entry is not None
        if entry.name.endswith((".jsonl", ".json")) and entry.is_file():
            main.append((Path(entry.path), False))
        elif entry.is_dir():
            for inner in listing(Path(entry.path), run):
                if inner is None:
                    failed = True
                elif inner.name.endswith(".jsonl") and inner.is_file():
                    subs.append((Path(inner.path), True))
    return main, subs, failed
