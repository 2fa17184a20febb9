"""Claude Code: session transcripts under ``projects/`` and the prompt history.

Transcripts are ``<config>/projects/<munged cwd>/<sessionId>.jsonl`` (``<config>``
is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``). The folder is scanned again on every
run, because sessions start at any time; each file is tailed from its own byte
checkpoint (see :mod:`urchin.collectors.tail`), never past its last newline.

What becomes an event:

* a human prompt (a ``user`` line with no ``tool_result`` block, not ``isMeta``,
  not a compaction summary, not ``<command-name>``/``<local-command-stdout>``
  markup) → ``conversation``; a ``!`` shell escape (``<bash-input>``) → ``command``;
* assistant text → ``agent``; ``thinking`` blocks are left out;
* a ``Bash`` tool use → ``command`` (the command line); an edit or write → ``file``
  (the path); any other tool use → ``agent`` titled ``tool: <name>`` with a short
  summary of its input;
* tool results, ``summary``, ``system`` and every other line type are skipped:
  they are large, and the tool use already says what ran.

Subagent transcripts (``<sessionId>/subagents/*.jsonl``, and the older
``agent-*.jsonl`` beside the session) are read too, but everything in them is
``agent`` or ``command``: their "user" turns come from the parent agent, not a
person. ``tool-results/`` and other side files are ignored.

Event ids derive from the record: the line ``uuid`` for prompts, the API message
id plus the block (tool-use id, or a hash of the text) for assistant output, so
one message split over several lines, a line written twice, or a forked session
that repeats earlier lines all map to the same ids. A bounded window of the keys
already emitted lives in the checkpoint and drops such repeats; when a transcript
is replaced or truncated, it is re-read and lines older than the newest one
already read are skipped as well.

``history.jsonl`` holds every prompt typed interactively (source ``claude-cli``,
as earlier urchin versions wrote it). Slash commands such as ``/clear`` are
skipped, and a prompt that also appears in a transcript within a few minutes is
recorded once: whichever source is read first wins.

Content is capped at :data:`MAX_CONTENT` characters; lines longer than
``max_line_bytes`` (pasted images, huge tool output) are skipped and counted.
Malformed lines are skipped and counted; an unreadable file is reported as an
error and keeps its checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin import paths
from urchin.collectors.base import AgentFolderCollector, CollectorRun, stable_id
from urchin.collectors.records import (
    MAX_CONTENT,
    PromptMatcher,
    RecentKeys,
    Tally,
    clip,
    epoch_ms,
    optional_timestamp,
    parse_json_line,
    unchanged_since,
)
from urchin.collectors.tail import FileState, FileTail, record_key
from urchin.event import Event, EventKind

__all__ = [
    "HISTORY_SOURCE",
    "MAX_CONTENT",
    "SOURCE",
    "ClaudeCollector",
    "Item",
    "PromptMatcher",
    "RecentKeys",
    "clip",
    "default_root",
    "transcript_items",
]

log = logging.getLogger(__name__)

SOURCE = "claude"
HISTORY_SOURCE = "claude-cli"
#: Longer transcript lines are skipped without being held in memory.
#: How many emitted record keys the checkpoint remembers across all files.
_BATCH = 500
_TOOL_SUMMARY = 300

_SHELL_TOOLS = frozenset({"Bash"})
_FILE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_SUMMARY_FIELDS = (
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "subagent_type",
    "prompt",
)
# Markup Claude Code writes on user lines for slash commands and their output.
_MARKUP = re.compile(
    r"\s*<(command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|local-command-caveat|bash-stdout|bash-stderr|system-reminder)>"
)
_BASH_INPUT = re.compile(r"\s*<bash-input>(.*)</bash-input>\s*\Z", re.DOTALL)
_INTERRUPTED = "[Request interrupted by user"
_SLASH_COMMAND = re.compile(r"/[A-Za-z][\w:.-]*(?:\s.*)?", re.DOTALL)


def default_root(env: Mapping[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, default ``~/.claude``."""
    return paths.tool_home(env, "CLAUDE_CONFIG_DIR", ".claude")


@dataclass(frozen=True, slots=True)
class Item:
    """One event-to-be from a transcript line; ``key`` identifies it across re-reads."""

    key: str
    kind: EventKind
    content: str
    title: str | None = None
    prompt: bool = False


def _text_blocks(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts)


def _has_tool_result(content: object) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _tool_summary(name: str, data: object) -> str:
    """A one-line description of a tool call's input, from the fields people recognise."""
    if not isinstance(data, dict):
        return name
    parts = [
        f"{field}: {' '.join(value.split())}"
        for field in _SUMMARY_FIELDS
        if isinstance(value := data.get(field), str) and value.strip()
    ]
    if not parts:
        try:
            parts = [json.dumps(data, ensure_ascii=False, separators=(",", ":"))]
        except (TypeError, ValueError):
            parts = []
    return clip("; ".join(parts) or name, _TOOL_SUMMARY)


def _tool_item(block: dict[str, Any], key: str) -> Item | None:
    name = block.get("name")
    if not isinstance(name, str) or not name:
        return None
    data = block.get("input")
    title = f"tool: {name}"
    if name in _SHELL_TOOLS and isinstance(data, dict):
        command = data.get("command")
        if isinstance(command, str) and command.strip():
            return Item(key, EventKind.COMMAND, clip(command), title)
    if name in _FILE_TOOLS and isinstance(data, dict):
        target = data.get("file_path") or data.get("notebook_path")
        if isinstance(target, str) and target.strip():
            return Item(key, EventKind.FILE, clip(target), title)
    return Item(key, EventKind.AGENT, _tool_summary(name, data), title)


def _user_items(record: dict[str, Any], uuid: str, subagent: bool) -> list[Item]:
    if record.get("isMeta") or record.get("isCompactSummary"):
        return []
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if _has_tool_result(content):
        return []
    text = _text_blocks(content).strip()
    if not text or text.startswith(_INTERRUPTED):
        return []
    shell = _BASH_INPUT.match(text)
    if shell:
        command = shell.group(1).strip()
        if not command:
            return []
        return [Item(uuid, EventKind.COMMAND, clip(command), "shell escape")]
    if _MARKUP.match(text):
        return []
    if subagent:
        return [Item(uuid, EventKind.AGENT, clip(text), "subagent prompt")]
    return [Item(uuid, EventKind.CONVERSATION, clip(text), prompt=True)]


def _assistant_items(record: dict[str, Any], uuid: str) -> list[Item]:
    if record.get("isApiErrorMessage"):
        return []
    message = record.get("message")
    if not isinstance(message, dict):
        return []
    message_id = message.get("id")
    # The API message id survives a line being split, repeated or copied into a fork.
    base = message_id if isinstance(message_id, str) and message_id else uuid
    content = message.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else []
    if isinstance(content, list):
        blocks = content
    items: list[Item] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = block["text"].strip()
            if not text or text == "(no content)":
                continue
            key = f"{base}/text/{record_key(None, text)}" if base != uuid else f"{uuid}/{index}"
            items.append(Item(key, EventKind.AGENT, clip(text)))
        elif kind == "tool_use":
            tool_id = block.get("id")
            key = f"tool/{tool_id}" if isinstance(tool_id, str) and tool_id else f"{uuid}/{index}"
            item = _tool_item(block, key)
            if item is not None:
                items.append(item)
    return items


def transcript_items(record: object, *, subagent: bool = False) -> list[Item]:
    """The events one transcript line yields; unknown or skipped lines yield none."""
    if not isinstance(record, dict):
        return []
    uuid = record.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        return []
    subagent = subagent or bool(record.get("isSidechain"))
    match record.get("type"):
        case "user":
            return _user_items(record, uuid, subagent)
        case "assistant":
            return _assistant_items(record, uuid)
        case _:
            return []


class ClaudeCollector(AgentFolderCollector):
    """Reads Claude Code transcripts and ``history.jsonl`` under the config folder."""

    name = "claude"
    default_root = staticmethod(default_root)

    @property
    def projects(self) -> Path:
        return self.root / "projects"

    @property
    def history(self) -> Path:
        return self.root / "history.jsonl"

    def available(self) -> bool:
        return self.projects.is_dir() or self.history.is_file()

    # -- discovery ----------------------------------------------------------------------

    def _transcripts(self, run: CollectorRun) -> tuple[list[tuple[Path, bool]], bool]:
        """Every transcript file, whether it belongs to a subagent, and whether listing failed."""
        found: list[tuple[Path, bool]] = []
        failed = False
        for project in _listing(self.projects, run):
            if project is None:
                failed = True
                continue
            if not project.is_dir():
                continue
            for entry in _listing(Path(project.path), run):
                if entry is None:
                    failed = True
                elif entry.name.endswith(".jsonl") and entry.is_file():
                    found.append((Path(entry.path), entry.name.startswith("agent-")))
                elif entry.is_dir():
                    subagents = Path(entry.path) / "subagents"
                    for sub in _listing(subagents, run):
                        if sub is None:
                            failed = True
                        elif sub.name.endswith(".jsonl") and sub.is_file():
                            found.append((Path(sub.path), True))
        return found, failed

    # -- collection -----------------------------------------------------------------------

    def collect(self, run: CollectorRun) -> None:
        """Emit new transcript lines and history prompts, then save the checkpoint.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        saved_files = run.state.get("files")
        saved_files = saved_files if isinstance(saved_files, dict) else {}
        seen = RecentKeys(run.state.get("seen"))
        prompts = PromptMatcher(run.state.get("prompts"))
        tally = Tally()
        transcripts, listing_failed = self._transcripts(run)
        # A folder we could not list keeps its files' checkpoints; others are dropped
        # once their file is gone (Claude Code deletes old transcripts).
        files: dict[str, Any] = dict(saved_files) if listing_failed else {}
        for path, subagent in transcripts:
            key = str(path)
            entry = self._read_transcript(
                run, path, saved_files.get(key), subagent, seen, prompts, tally
            )
            if entry is None:
                files.pop(key, None)
            else:
                files[key] = entry
        history = self._read_history(run, run.state.get("history"), seen, prompts, tally)
        self._report(run, tally)
        state: dict[str, Any] = {
            "version": 1,
            "files": files,
            "seen": seen.to_json(),
            "prompts": prompts.to_json(),
            "history": history,
        }
        if run.result.new or any(run.state.get(k) != v for k, v in state.items()):
            run.save(state)

    def _report(self, run: CollectorRun, tally: Tally) -> None:
        run.skip(tally.malformed + tally.oversized)
        if tally.malformed:
            log.warning("claude: skipped %d malformed lines", tally.malformed)
        if tally.oversized:
            log.warning(
                "claude: skipped %d lines longer than %d bytes",
                tally.oversized,
                self.max_line_bytes,
            )
        if tally.replaced:
            log.warning("claude: %d files were replaced or truncated; re-read them", tally.replaced)

    def _read_transcript(
        self,
        run: CollectorRun,
        path: Path,
        previous: object,
        subagent: bool,
        seen: RecentKeys,
        prompts: PromptMatcher,
        tally: Tally,
    ) -> object:
        """Emit one transcript's new lines; returns its checkpoint entry (None: file gone)."""
        prior = previous if isinstance(previous, dict) else {}
        state = FileState.from_json(prior)
        last_ms = prior.get("last_ms") if isinstance(prior.get("last_ms"), int) else None
        if state is not None and unchanged_since(path, state):
            return previous
        batch: list[Event] = []
        try:
            with FileTail(path, state, max_line_bytes=self.max_line_bytes) as tail:
                # After a rewrite, lines older than the newest one read are not new.
                floor = last_ms if tail.replaced else None
                tally.replaced += tail.replaced
                for _, line in tail.lines():
                    if not line.strip():
                        continue
                    try:
                        record = parse_json_line(line)
                    except ValueError:
                        tally.malformed += 1
                        continue
                    stamp = record.get("timestamp") if isinstance(record, dict) else None
                    when = optional_timestamp(stamp)
                    if when is not None:
                        last_ms = max(last_ms or 0, epoch_ms(when))
                    for event in self._events(record, when, floor, subagent, seen, prompts, run):
                        batch.append(event)
                        if len(batch) >= _BATCH:
                            run.emit(batch)
                            batch = []
                tally.oversized += tail.oversized
                checkpoint = tail.checkpoint()
        except FileNotFoundError:
            run.emit(batch)
            return None
        except OSError as exc:
            # Lines already parsed are in the seen window, so emit them now; the old
            # checkpoint makes the next run read them again and skip them as seen.
            run.emit(batch)
            run.error(f"cannot read {path}: {exc.strerror or type(exc).__name__}")
            return previous
        run.emit(batch)
        if last_ms is not None:
            checkpoint["last_ms"] = last_ms
        return checkpoint

    def _events(
        self,
        record: object,
        when: datetime | None,
        floor: int | None,
        subagent: bool,
        seen: RecentKeys,
        prompts: PromptMatcher,
        run: CollectorRun,
    ) -> Iterator[Event]:
        items = transcript_items(record, subagent=subagent)
        if not items:
            run.skip()
            return
        assert isinstance(record, dict)  # transcript_items yields nothing otherwise
        moment = when or datetime.now(UTC)
        for item in items:
            if item.key in seen or (floor is not None and epoch_ms(moment) < floor):
                run.skip()
                continue
            seen.add(item.key)
            if item.prompt and prompts.seen_elsewhere("t", item.content, epoch_ms(moment)):
                run.skip()
                continue
            yield Event.create(
                item.content,
                SOURCE,
                item.kind,
                timestamp=moment,
                event_id=stable_id(SOURCE, item.key),
                workspace=_str(record.get("cwd")),
                session=_str(record.get("sessionId")),
                title=item.title,
            )

    # -- history.jsonl ----------------------------------------------------------------------

    def _read_history(
        self,
        run: CollectorRun,
        previous: object,
        seen: RecentKeys,
        prompts: PromptMatcher,
        tally: Tally,
    ) -> object:
        prior = previous if isinstance(previous, dict) else {}
        state = FileState.from_json(prior)
        last_ms = prior.get("last_ms") if isinstance(prior.get("last_ms"), int) else None
        if state is not None and unchanged_since(self.history, state):
            return previous
        events: list[Event] = []
        try:
            with FileTail(self.history, state, max_line_bytes=self.max_line_bytes) as tail:
                floor = last_ms if tail.replaced else None
                tally.replaced += tail.replaced
                for _, line in tail.lines():
                    if not line.strip():
                        continue
                    try:
                        record = parse_json_line(line)
                    except ValueError:
                        tally.malformed += 1
                        continue
                    event = _history_event(record, floor, seen, prompts)
                    if event is None:
                        run.skip()
                        continue
                    last_ms = max(last_ms or 0, epoch_ms(event.timestamp))
                    events.append(event)
                tally.oversized += tail.oversized
                checkpoint = tail.checkpoint()
        except FileNotFoundError:
            run.emit(events)
            return None
        except OSError as exc:
            run.emit(events)
            run.error(f"cannot read {self.history}: {exc.strerror or type(exc).__name__}")
            return previous
        run.emit(events)
        if last_ms is not None:
            checkpoint["last_ms"] = last_ms
        return checkpoint


def _history_event(
    record: object, floor: int | None, seen: RecentKeys, prompts: PromptMatcher
) -> Event | None:
    """The event for one ``history.jsonl`` line, or None when it is skipped."""
    if not isinstance(record, dict):
        return None
    display = record.get("display")
    stamp = record.get("timestamp")
    if not isinstance(display, str) or not display.strip():
        return None
    if not isinstance(stamp, int | float) or isinstance(stamp, bool) or stamp <= 0:
        return None
    text = display.strip()
    if _SLASH_COMMAND.fullmatch(text):
        return None
    when_ms = int(stamp)
    try:
        moment = datetime.fromtimestamp(when_ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    key = f"history/{when_ms}/{text}"
    if key in seen or (floor is not None and when_ms < floor):
        return None
    seen.add(key)
    content = clip(text)
    if prompts.seen_elsewhere("h", content, when_ms):
        return None
    return Event.create(
        content,
        HISTORY_SOURCE,
        EventKind.CONVERSATION,
        timestamp=moment,
        event_id=stable_id(HISTORY_SOURCE, str(when_ms), text),
        workspace=_str(record.get("project")),
        session=_str(record.get("sessionId")),
    )


def _listing(folder: Path, run: CollectorRun) -> list[os.DirEntry[str] | None]:
    """A folder's entries sorted by name; ``[None]`` when it exists but cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            listed: list[os.DirEntry[str] | None] = [*sorted(entries, key=lambda e: e.name)]
        return listed
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        run.error(f"cannot list {folder}: {exc.strerror or type(exc).__name__}")
        return [None]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
