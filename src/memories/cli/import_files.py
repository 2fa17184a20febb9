"""Reading what `memories import` takes: a JSONL file, or a folder of Markdown notes.

JSONL: one object per line, ``{"title", "body", "tags"?, "source"?, "card_type"?,
"metadata"?}``; blank lines are skipped. Markdown (the Obsidian / basic-memory layout): every
``*.md`` under the folder (hidden folders such as ``.obsidian`` and ``.git`` are skipped), the
title from the front matter's ``title`` or else the file name, tags from ``tags`` (a list or a
comma- or space-separated string; a leading ``#`` is dropped), the body after the front matter
as written (``[[wikilinks]]`` stay), and the note's path inside the folder as its source.

Front matter is the YAML block between ``---`` lines at the top. Only the subset notes use is
read (``key: value``, ``key: [a, b]``, and ``key:`` followed by ``- item`` lines, quoted or
plain scalars); other keys are ignored. Problems are reported by line or file with a reason
that never quotes the content.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memories.service.requests import ImportItem

__all__ = ["Problem", "Read", "read_jsonl", "read_markdown", "split_front_matter"]

_FIELDS = frozenset({"title", "body", "tags", "source", "card_type", "metadata"})


@dataclass(frozen=True)
class Problem:
    """Why one line or file was not imported: where (``line`` or ``file``) and the reason."""

    where: str
    error: str

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "error": self.error}


@dataclass(frozen=True)
class Read:
    """One item read, with where it came from (for error reports)."""

    where: str
    item: ImportItem


def _validation_reason(exc: ValidationError) -> str:
    """The first problem pydantic found, as field and rule (its input is never shown)."""
    first = exc.errors(include_input=False)[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "the item"
    return f"{field}: {first.get('msg', 'invalid')}"


def _item(data: dict[str, Any]) -> ImportItem:
    return ImportItem.model_validate(data)


def read_jsonl(path: Path) -> Iterator[Read | Problem]:
    """Items and problems of a JSONL file, in order.

    Raises:
        OSError: the file cannot be opened.
    """
    with path.open(encoding="utf-8", errors="strict", newline="") as handle:
        number = 0
        while True:
            try:
                line = handle.readline()
            except UnicodeDecodeError:
                yield Problem(f"line {number + 1}", "not UTF-8; the rest of the file was skipped")
                return
            if not line:
                return
            number += 1
            where = f"line {number}"
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Problem(where, f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(data, dict):
                yield Problem(where, "not a JSON object")
                continue
            unknown = sorted(set(data) - _FIELDS)
            if unknown:
                yield Problem(where, f"unknown field {unknown[0][:40]!r}")
                continue
            try:
                yield Read(where, _item(data))
            except ValidationError as exc:
                yield Problem(where, _validation_reason(exc))


def _scalar(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value


def _inline_list(raw: str) -> list[str]:
    inner = raw.strip()[1:-1]
    return [_scalar(part) for part in inner.split(",") if part.strip()]


def split_front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """The front matter (the subset described above) and the body after it."""
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines(keepends=True)
    if lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    fields: dict[str, str | list[str]] = {}
    current: str | None = None
    for line in lines[1:end]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") and current is not None:
            existing = fields.get(current)
            items = existing if isinstance(existing, list) else []
            items.append(_scalar(stripped[2:]))
            fields[current] = items
            continue
        key, colon, value = line.partition(":")
        if not colon or line[:1].isspace():
            continue
        current = key.strip()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            fields[current] = _inline_list(value)
        elif value:
            fields[current] = _scalar(value)
        else:
            fields[current] = []
    return fields, "".join(lines[end + 1 :]).lstrip("\n")


def _tags(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    parts = value if isinstance(value, list) else value.replace(",", " ").split()
    return [p.strip().lstrip("#") for p in parts if p.strip().lstrip("#")]


def _notes(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md") and not name.startswith("."):
                yield Path(folder) / name


def read_markdown(root: Path) -> Iterator[Read | Problem]:
    """Items and problems of a folder of Markdown notes, in path order."""
    for path in _notes(root):
        where = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            yield Problem(where, "not UTF-8")
            continue
        except OSError as exc:
            yield Problem(where, f"cannot read it ({exc.strerror or type(exc).__name__})")
            continue
        front, body = split_front_matter(text)
        title = front.get("title")
        if not isinstance(title, str) or not title.strip():
            title = path.stem
        data: dict[str, Any] = {"title": title, "body": body, "source": where}
        tags = _tags(front.get("tags"))
        if tags:
            data["tags"] = tags
        try:
            yield Read(where, _item(data))
        except ValidationError as exc:
            yield Problem(where, _validation_reason(exc))
