"""Field readers and small conversions of Codex records, for the session and history readers."""

from __future__ import annotations

import hashlib
import io
import re
import shlex
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from urchin.collectors.transcript import (
    parse_json_line,
    slash_command,
)

__all__ = [
    "block_texts",
    "blocks_text",
    "capped_lines",
    "command_text",
    "from_seconds",
    "is_scaffolding",
    "is_slash_command",
    "json_object",
    "line_digest",
    "mark",
    "ms_to_ts",
    "read_ts",
    "title",
    "user_text",
]


SOURCE = "codex"

_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_SCAFFOLD = re.compile(
    r"\s*<(?P<tag>[A-Za-z][\w-]*)(?:\s[^>]*)?>.*</(?P=tag)(?:\s[^>]*)?>\s*", re.DOTALL
)
_SCAFFOLD_TAGS = frozenset({"INSTRUCTIONS", "instructions", "permissions"})


def user_text(content: object) -> str:
    """The prompt in a user message, without Codex's injected context blocks."""
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    texts = [text for text in block_texts(content, "input_text") if not is_scaffolding(text)]
    return "\n\n".join(texts).strip()


def blocks_text(content: object, block_type: str) -> str:
    return "\n\n".join(block_texts(content, block_type)).strip()


def block_texts(content: object, block_type: str) -> list[str]:
    """The texts of the ``block_type`` blocks in a message's content, blank ones left out."""
    if not isinstance(content, list):
        return []
    return [
        text
        for block in content
        if isinstance(block, dict)
        and block.get("type") == block_type
        and isinstance(text := block.get("text"), str)
        and text.strip()
    ]


def is_scaffolding(text: str) -> bool:
    stripped = text.strip()
    if not stripped.startswith(("<", "# AGENTS.md instructions")):
        return False  # most prompts: neither a tag block nor the AGENTS.md preamble
    if stripped.startswith("# AGENTS.md instructions"):
        return True
    match = _SCAFFOLD.fullmatch(stripped)
    if match is None:
        return False
    tag = match.group("tag")
    return "_" in tag or tag in _SCAFFOLD_TAGS


def command_text(command: object) -> str:
    if isinstance(command, str):
        return command.strip()
    if not isinstance(command, list):
        return ""
    parts = [part for part in command if isinstance(part, str)]
    if not parts or len(parts) != len(command):
        return ""
    if len(parts) == 3 and parts[0] in _SHELLS and parts[1] in ("-c", "-lc"):
        return parts[2].strip()
    return shlex.join(parts)


def is_slash_command(text: str) -> bool:
    # A slash command on one line; a prompt that merely starts with one is still a prompt.
    return slash_command(text) is not None and "\n" not in text.strip()


def title(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:200]


def capped_lines(stream: io.BufferedReader, limit: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines of a stream, skipping any longer than ``limit``."""
    offset = 0
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if not line.endswith(b"\n"):
            if len(line) < limit:
                return  # unterminated last line
            while line and not line.endswith(b"\n"):
                offset += len(line)
                line = stream.readline(limit)
            offset += len(line)
            continue
        yield offset, line[:-1]
        offset += len(line)


def line_digest(line: bytes) -> str:
    return hashlib.blake2b(line, digest_size=12).hexdigest()


def json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = parse_json_line(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_ts(value: str) -> datetime | None:
    """The time a Codex timestamp names, in UTC (naive ones taken as UTC); None if unreadable."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def from_seconds(ts: int) -> datetime:
    try:
        return datetime.fromtimestamp(ts, UTC)
    except (OverflowError, OSError, ValueError):
        return datetime.now(UTC)


def ms_to_ts(ms: int) -> str:
    # The fixed-width form Codex writes, so it compares as a string with its timestamps.
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def mark(value: object) -> tuple[int, str]:
    if isinstance(value, list) and len(value) == 2:
        ms, thread_id = value
        if isinstance(ms, int) and isinstance(thread_id, str):
            return ms, thread_id
    return -(1 << 62), ""
