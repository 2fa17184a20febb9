"""The skill this release ships: its ``SKILL.md`` bytes and what its front matter says.

The text lives in ``data/memories/SKILL.md`` beside this module (package data, so it is in the
wheel) and is installed byte for byte: nothing is interpolated into it, so it can never carry a
path, a vault id, a token or a secret of this machine.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "DESCRIPTION_MAX",
    "NAME_MAX",
    "SKILL_FILE",
    "SKILL_NAME",
    "Skill",
    "bundled_skill",
    "parse_front_matter",
]

SKILL_NAME = "memories"
SKILL_FILE = "SKILL.md"
#: Limits of the Agent Skills format that Claude Code, Codex and OpenCode all read.
NAME_MAX = 64
DESCRIPTION_MAX = 1024

_NAME_SHAPE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill folder's content: its name (the folder's name too), version and file bytes."""

    name: str
    version: str
    description: str
    data: bytes


def parse_front_matter(text: str) -> dict[str, str]:
    """The top-level ``key: value`` pairs of a ``SKILL.md`` front matter block, plus any
    ``metadata:`` entries as ``metadata.KEY``.

    Deliberately small (the block is ours and flat); it reads what the clients read.

    Raises:
        ValueError: the text does not start with a ``---`` block that is closed again.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise ValueError("SKILL.md must start with a '---' front matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("SKILL.md front matter is not closed with '---'") from None
    fields: dict[str, str] = {}
    section = ""
    for line in lines[1:end]:
        if not line.strip():
            continue
        indented = line[:1] in (" ", "\t")
        key, sep, value = line.strip().partition(":")
        if not sep:
            raise ValueError("SKILL.md front matter holds a line that is not 'key: value'")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if indented and section:
            fields[f"{section}.{key.strip()}"] = value
        else:
            section = key.strip() if not value else ""
            fields[key.strip()] = value
    return fields


@functools.cache
def bundled_skill() -> Skill:
    """The skill shipped with this release.

    Raises:
        RuntimeError: the packaged file is missing or its front matter breaks the format's
            rules (a packaging bug, never the user's doing).
    """
    ref = resources.files(__package__).joinpath("data", SKILL_NAME, SKILL_FILE)
    try:
        data = ref.read_bytes()
    except OSError as exc:
        raise RuntimeError("the packaged SKILL.md is missing; reinstall memories") from exc
    try:
        fields = parse_front_matter(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RuntimeError("the packaged SKILL.md is malformed") from exc
    name = fields.get("name", "")
    description = fields.get("description", "")
    version = fields.get("metadata.version", "")
    if name != SKILL_NAME or len(name) > NAME_MAX or not _NAME_SHAPE.fullmatch(name):
        raise RuntimeError("the packaged SKILL.md has an invalid name")
    if not 1 <= len(description) <= DESCRIPTION_MAX:
        raise RuntimeError("the packaged SKILL.md description is empty or too long")
    if not version:
        raise RuntimeError("the packaged SKILL.md carries no metadata.version")
    return Skill(name=name, version=version, description=description, data=data)
