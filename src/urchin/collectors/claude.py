"""Claude Code: session transcripts under ``projects/`` and the prompt history.

Transcripts are ``<config>/projects/<munged cwd>/<sessionId>.jsonl`` (``<config>``
is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``). The folder is scanned again on every
run, because sessions start at any time; each file is tailed from its own byte
checkpoint (see :mod:`urchin.collectors.tail`), never past its last newline.

What becomes an event:

* a human prompt (a ``user`` line with no ``tool_result`` block, not ``isMeta``,
  not a compaction summary, not ``<local-command-stdout>`` or other markup) →
  ``conversation``; a slash command or skill typed with arguments
  (``<command-name>/x</command-name>`` … ``<command-args>…</command-args>``) is the
  prompt ``/x arguments``, a bare one is left out; a ``!`` shell escape
  (``<bash-input>``) → ``command``;
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
as earlier urchin versions wrote it). Bare slash commands such as ``/clear`` are
skipped (with arguments they are prompts, as in transcripts), and a prompt that
also appears in a transcript within a few minutes is recorded once: whichever
source is read first wins.

Content is capped at :data:`MAX_CONTENT` characters; lines longer than
``max_line_bytes`` (pasted images, huge tool output) are skipped and counted.
Malformed lines are skipped and counted; an unreadable file is reported as an
error and keeps its checkpoint.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from urchin import paths
from urchin.collectors.base import AgentFolderCollector, CollectorRun, stable_id
from urchin.collectors.tail import record_key
from urchin.collectors.transcript import (
    MAX_CONTENT,
    JsonlTail,
    PromptMatcher,
    RecentKeys,
    Tally,
    as_dict,
    as_int,
    as_str,
    clip,
    epoch_ms,
    from_epoch_ms,
    listing,
    optional_timestamp,
    slash_command,
    tool_summary,
)
from urchin.event import Actor, Event, EventKind

__all__ = [
    "HISTORY_SOURCE",
    "MAX_CONTENT",
    "SOURCE",
    "ClaudeCollector",
    "Item",
    "default_root",
    "transcript_items",
]

log = logging.getLogger(__name__)

SOURCE = "claude"
HISTORY_SOURCE = "claude-cli"

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
_COMMAND_TAG = re.compile(r"<(command-name|command-args)>(.*?)</\1>", re.DOTALL)
_BASH_INPUT = re.compile(r"\s*<bash-input>(.*)</bash-input>\s*\Z", re.DOTALL)
_INTERRUPTED = "[Request interrupted by user"
# Inside a JSON string every quote is escaped, so these bytes only occur as structure.
_TOOL_RESULT = b'"type":"tool_result"'
_ASSISTANT = b'"type":"assistant"'


def default_root(env: Mapping[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, default ``~/.claude``."""
    return paths.tool_home(env, "CLAUDE_CONFIG_DIR", ".claude")


class Item(NamedTuple):
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


def _tool_item(block: dict[str, Any], key: str) -> Item | None:
    name = block.get("name")
    if not isinstance(name, str) or not name.strip():
        # Nothing to call it by: without input it would also be an event with no text.
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
    return Item(key, EventKind.AGENT, tool_summary(name, data, _SUMMARY_FIELDS), title)


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
    # Shell escapes and markup start with a tag; the text is stripped, so "<" comes first.
    if text[0] == "<":
        shell = _BASH_INPUT.match(text)
        if shell:
            command = shell.group(1).strip()
            if not command:
                return []
            return [Item(uuid, EventKind.COMMAND, clip(command), "shell escape")]
        if _MARKUP.match(text):
            # A slash command or skill typed with arguments is a request; a bare one is not.
            text = _command_prompt(text) or ""
            if not text:
                return []
    if subagent:
        return [Item(uuid, EventKind.AGENT, clip(text), "subagent prompt")]
    return [Item(uuid, EventKind.CONVERSATION, clip(text), prompt=True)]


def _command_prompt(text: str) -> str | None:
    """``/name arguments`` from slash-command markup; None without arguments."""
    tags: dict[str, str] = {}
    for match in _COMMAND_TAG.finditer(text):
        tags.setdefault(match.group(1), match.group(2).strip())
    name, args = tags.get("command-name", ""), tags.get("command-args", "")
    if not name or not args:
        return None
    return f"{name if name.startswith('/') else '/' + name} {args}"


def is_tool_result_line(line: bytes) -> bool:
    """Whether a raw transcript line is a tool result, known without decoding it.

    Tool results are most of a transcript's bytes and never become events.
    """
    return _TOOL_RESULT in line and _ASSISTANT not in line


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
    sources = (SOURCE, HISTORY_SOURCE)
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
        for project in listing(self.projects, run):
            if project is None:
                failed = True
                continue
            if not project.is_dir():
                continue
            for entry in listing(Path(project.path), run):
                if entry is None:
                    failed = True
                elif entry.name.endswith(".jsonl") and entry.is_file():
                    found.append((Path(entry.path), entry.name.startswith("agent-")))
                elif entry.is_dir():
                    subagents = Path(entry.path) / "subagents"
                    for sub in listing(subagents, run):
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
        saved_files = as_dict(run.state.get("files"))
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
        tally.report(run)
        state: dict[str, Any] = {
            "version": 1,
            "files": files,
            "seen": seen.to_json(),
            "prompts": prompts.to_json(),
            "history": history,
        }
        if run.result.new or any(run.state.get(k) != v for k, v in state.items()):
            run.save(state)

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
        tail = JsonlTail(path, previous, tally, max_line_bytes=self.max_line_bytes)
        if tail.unchanged():
            return previous
        for _, record in tail.records(is_tool_result_line):
            if not isinstance(record, dict):
                run.skip()
                continue
            when = optional_timestamp(record.get("timestamp"))
            if when is not None:
                tail.saw_time(when)
            items = transcript_items(record, subagent=subagent)
            if items:
                self._emit(run, record, items, when, tail.floor, seen, prompts)
            else:
                run.skip()
        return tail.entry(run)

    def _emit(
        self,
        run: CollectorRun,
        record: dict[str, Any],
        items: list[Item],
        when: datetime | None,
        floor: int | None,
        seen: RecentKeys,
        prompts: PromptMatcher,
    ) -> None:
        """Queue the events of one line's items that are new."""
        moment = when or datetime.now(UTC)
        # Epoch ms only where it is compared: after a rewrite, and for prompts.
        moment_ms = None if floor is None else epoch_ms(moment)
        if floor is not None and moment_ms is not None and moment_ms < floor:
            run.skip(len(items))
            return
        skipped = 0
        # Looked up once the line has a new item: most repeats (a fork, a re-read) have none.
        fields: tuple[str | None, str | None, Actor] | None = None
        for item in items:
            if not seen.first_time(item.key):
                skipped += 1
                continue
            if item.prompt:
                if moment_ms is None:
                    moment_ms = epoch_ms(moment)
                if prompts.seen_elsewhere("t", item.content, moment_ms):
                    skipped += 1
                    continue
            if fields is None:
                workspace = as_str(record.get("cwd"))
                fields = (workspace, as_str(record.get("sessionId")), run.actor(workspace))
            run.add(
                Event.create(
                    item.content,
                    SOURCE,
                    item.kind,
                    timestamp=moment,
                    event_id=stable_id(SOURCE, item.key),
                    workspace=fields[0],
                    session=fields[1],
                    title=item.title,
                    actor=fields[2],
                )
            )
        if skipped:
            run.skip(skipped)

    # -- history.jsonl ----------------------------------------------------------------------

    def _read_history(
        self,
        run: CollectorRun,
        previous: object,
        seen: RecentKeys,
        prompts: PromptMatcher,
        tally: Tally,
    ) -> object:
        tail = JsonlTail(self.history, previous, tally, max_line_bytes=self.max_line_bytes)
        if tail.unchanged():
            return previous
        for _, record in tail.records():
            event = _history_event(record, tail.floor, seen, prompts)
            if event is None:
                run.skip()
                continue
            tail.saw(epoch_ms(event.timestamp))
            run.add(event)
        return tail.entry(run)


def _history_event(
    record: object, floor: int | None, seen: RecentKeys, prompts: PromptMatcher
) -> Event | None:
    """The event for one ``history.jsonl`` line, or None when it is skipped."""
    if not isinstance(record, dict):
        return None
    text = as_str(record.get("display"))
    when_ms = as_int(record.get("timestamp"))
    moment = from_epoch_ms(when_ms)
    if text is None or when_ms is None or moment is None:
        return None
    text = text.strip()
    command = slash_command(text)
    if command is not None and not command.args:
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
        workspace=as_str(record.get("project")),
        session=as_str(record.get("sessionId")),
    )
