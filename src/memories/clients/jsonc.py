"""Edit JSON and JSONC (JSON with comments and trailing commas) without reformatting it.

A :class:`JsoncDocument` parses the text into a tree that remembers where every key, value
and comma sits, and each edit splices new text into those places: comments, indentation,
key order, blank lines and everything the edit does not touch stay byte for byte as they were.
New members follow the file's own indentation, line endings and trailing-comma habit.

The parser is strict about everything but comments and trailing commas: a duplicate key, a
stray character or an unterminated string makes the whole text unreadable (``JsoncError``),
so a file we cannot round-trip is never rewritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["JsoncDocument", "JsoncError", "Path"]

#: A path into the document: object keys (str) and array indexes (int).
Path: TypeAlias = Sequence[str | int]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_WS = " \t\r\n"


class JsoncError(ValueError):
    """The text is not JSON/JSONC we can edit safely. ``line`` and ``column`` are 1-based;
    the message never quotes the text."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        super().__init__(f"{reason} at line {line}, column {column}")
        self.reason = reason
        self.line = line
        self.column = column


@dataclass
class _Node:
    kind: str  # "object" | "array" | "scalar"
    start: int
    end: int  # one past the closing bracket or the scalar's last character
    value: Any = None
    members: list[_Member] = field(default_factory=list)
    items: list[_Item] = field(default_factory=list)


@dataclass
class _Member:
    key: str
    key_start: int
    value: _Node
    comma: int | None  # index of the comma after the value, if any


@dataclass
class _Item:
    value: _Node
    comma: int | None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, pos: int | None = None) -> JsoncError:
        where = self.pos if pos is None else pos
        line = self.text.count("\n", 0, where) + 1
        column = where - (self.text.rfind("\n", 0, where) + 1) + 1
        return JsoncError(reason, line, column)

    def skip(self) -> None:
        """Skip whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            char = text[self.pos]
            if char in _WS:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
            else:
                return

    def document(self) -> _Node | None:
        if self.text.startswith("\ufeff"):
            self.pos = 1
        self.skip()
        if self.pos == len(self.text):
            return None
        node = self.value()
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the document")
        return node

    def value(self) -> _Node:
        text = self.text
        if self.pos >= len(text):
            raise self.fail("unexpected end of text")
        char = text[self.pos]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        start = self.pos
        if char == '"':
            decoded = self.string()
            return _Node("scalar", start, self.pos, decoded)
        match = _NUMBER.match(text, self.pos)
        if match:
            self.pos = match.end()
            raw = match.group()
            number: Any = float(raw) if any(c in raw for c in ".eE") else int(raw)
            return _Node("scalar", start, self.pos, number)
        for word, literal in _LITERALS.items():
            if text.startswith(word, self.pos):
                self.pos += len(word)
                return _Node("scalar", start, self.pos, literal)
        raise self.fail("expected a value")

    def string(self) -> str:
        text, start = self.text, self.pos
        pos = start + 1
        while True:
            end = text.find('"', pos)
            if end < 0:
                raise self.fail("unterminated string", start)
            backslashes = 0
            while text[end - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                break
            pos = end + 1
        self.pos = end + 1
        try:
            decoded = json.loads(text[start : end + 1])
        except ValueError:
            raise self.fail("invalid string", start) from None
        assert isinstance(decoded, str)
        return decoded

    def object(self) -> _Node:
        node = _Node("object", self.pos, self.pos, {})
        self.pos += 1
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.fail("unterminated object", node.start)
            if self.text[self.pos] == "}":
                self.pos += 1
                node.end = self.pos
                return node
            if node.members and node.members[-1].comma is None:
                raise self.fail("expected a comma or }")
            if self.text[self.pos] != '"':
                raise self.fail("expected a key")
            key_start = self.pos
            key = self.string()
            if key in node.value:
                raise self.fail("duplicate key", key_start)
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected a colon")
            self.pos += 1
            self.skip()
            child = self.value()
            self.skip()
            comma = None
            if self.text.startswith(",", self.pos):
                comma = self.pos
                self.pos += 1
            node.members.append(_Member(key, key_start, child, comma))
            node.value[key] = child.value

    def array(self) -> _Node:
        node = _Node("array", self.pos, self.pos, [])
        self.pos += 1
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.fail("unterminated array", node.start)
            if self.text[self.pos] == "]":
                self.pos += 1
                node.end = self.pos
                return node
            if node.items and node.items[-1].comma is None:
                raise self.fail("expected a comma or ]")
            child = self.value()
            self.skip()
            comma = None
            if self.text.startswith(",", self.pos):
                comma = self.pos
                self.pos += 1
            node.items.append(_Item(child, comma))
            node.value.append(child.value)


class JsoncDocument:
    """One JSON/JSONC text and the edits made to it.

    Raises ``JsoncError`` (from the constructor) for text it cannot parse. A blank text is an
    empty document: the first :meth:`set` makes it an object.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._root = _Parser(text).document()
        self._newline = "\r\n" if "\r\n" in text else "\n"
        self._unit = _indent_unit(text)

    @property
    def text(self) -> str:
        return self._text

    @property
    def value(self) -> Any:
        """The document as plain Python values (``None`` for a blank text)."""
        return None if self._root is None else self._root.value

    def get(self, path: Path) -> Any:
        """The value at ``path``, or ``None`` when some step is missing."""
        node = self._find(path)
        return None if node is None else node.value

    # -- edits ------------------------------------------------------------------------------

    def set(self, path: Path, value: Any) -> None:
        """Set the object member at ``path`` (string keys), creating missing objects on the way.

        Raises:
            JsoncError: a step on the way exists but is not an object.
        """
        if not path or not all(isinstance(step, str) for step in path):
            raise ValueError("set needs a non-empty path of object keys")
        if self._root is None:
            rendered = _render(_nest(path, value), self._unit, self._newline)
            self._text = self._text + rendered + self._newline
            self._reparse()
            return
        node = self._root
        for depth, step in enumerate(path):
            if node.kind != "object":
                raise _shape_error(path[:depth])
            member = next((m for m in node.members if m.key == step), None)
            if member is None:
                self._insert_member(node, str(step), _nest(path[depth + 1 :], value))
                return
            if depth == len(path) - 1:
                if member.value.value == value and type(member.value.value) is type(value):
                    return
                indent = _line_indent(self._text, member.key_start)
                rendered = _render(value, self._unit, self._newline, indent)
                self._splice(member.value.start, member.value.end, rendered)
                return
            node = member.value

    def delete(self, path: Path) -> bool:
        """Remove the member or array item at ``path``; False when it is not there."""
        if not path:
            raise ValueError("delete needs a non-empty path")
        parent = self._find(path[:-1])
        step = path[-1]
        if parent is None:
            return False
        if parent.kind == "object" and isinstance(step, str):
            keys = [m.key for m in parent.members]
            if step not in keys:
                return False
            self._remove(parent, keys.index(step))
            return True
        if parent.kind == "array" and isinstance(step, int) and 0 <= step < len(parent.items):
            self._remove(parent, step)
            return True
        return False

    def append(self, path: Path, value: Any) -> None:
        """Append ``value`` to the array at ``path``, creating it (and objects on the way).

        Raises:
            JsoncError: the value at ``path`` (or a step on the way) has the wrong type.
        """
        node = self._find(path)
        if node is None:
            self.set(path, [value])
            return
        if node.kind != "array":
            raise _shape_error(path)
        if node.items:
            last = node.items[-1]
            self._insert_after(node, last.value.end, last.comma, value, node.items[0].value.start)
            return
        indent = _line_indent(self._text, node.start)
        rendered = _render(value, self._unit, self._newline, indent + self._unit)
        self._fill_empty(node, indent, rendered)

    # -- internals --------------------------------------------------------------------------

    def _reparse(self) -> None:
        self._root = _Parser(self._text).document()

    def _splice(self, start: int, end: int, new: str) -> None:
        self._text = self._text[:start] + new + self._text[end:]
        self._reparse()

    def _find(self, path: Path) -> _Node | None:
        node = self._root
        for step in path:
            if node is None:
                return None
            if node.kind == "object" and isinstance(step, str):
                node = next((m.value for m in node.members if m.key == step), None)
            elif node.kind == "array" and isinstance(step, int) and 0 <= step < len(node.items):
                node = node.items[step].value
            else:
                return None
        return node

    def _insert_member(self, node: _Node, key: str, value: Any) -> None:
        if node.members:
            last = node.members[-1]
            self._insert_after(
                node, last.value.end, last.comma, (key, value), node.members[0].key_start
            )
            return
        indent = _line_indent(self._text, node.start)
        child = indent + self._unit
        member = json.dumps(key, ensure_ascii=False) + ": "
        member += _render(value, self._unit, self._newline, child)
        self._fill_empty(node, indent, member)

    def _fill_empty(self, node: _Node, indent: str, rendered: str) -> None:
        """Put the first entry into an empty object or array (which may hold comments)."""
        inner = self._text[node.start + 1 : node.end - 1]
        nl, child = self._newline, indent + self._unit
        if not inner.strip(_WS):
            new = nl + child + rendered + nl + indent
        else:
            head = inner.rstrip(" \t")
            if not head.endswith("\n"):
                head += nl
            new = head + child + rendered + nl + indent
        self._splice(node.start + 1, node.end - 1, new)

    def _insert_after(
        self,
        node: _Node,
        value_end: int,
        comma: int | None,
        entry: Any,
        first_start: int,
    ) -> None:
        """Add ``entry`` (an item, or a ``(key, value)`` member) after the last one."""
        text, nl = self._text, self._newline
        inline = "\n" not in text[node.start : first_start]
        if isinstance(entry, tuple) and node.kind == "object":
            key, value = entry
            prefix = json.dumps(key, ensure_ascii=False) + ": "
        else:
            prefix, value = "", entry
        if inline:
            rendered = prefix + json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
            if comma is None:
                self._splice(value_end, value_end, ", " + rendered)
            else:
                self._splice(comma + 1, comma + 1, " " + rendered + ",")
            return
        indent = _line_indent(text, first_start)
        rendered = prefix + _render(value, self._unit, nl, indent)
        anchor = value_end if comma is None else comma + 1
        line_end = text.find("\n", anchor)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[anchor:line_end]
        # A comment that ends the last entry's line stays with that entry.
        if _only_comment(rest):
            insert_at = line_end - 1 if text[line_end - 1 : line_end] == "\r" else line_end
        else:
            insert_at = anchor
        addition = nl + indent + rendered + ("," if comma is not None else "")
        new = text[:insert_at] + addition + text[insert_at:]
        if comma is None:
            new = new[:value_end] + "," + new[value_end:]
        self._text = new
        self._reparse()

    def _remove(self, node: _Node, index: int) -> None:
        text = self._text
        entries: list[tuple[int, _Node, int | None]]
        if node.kind == "object":
            entries = [(m.key_start, m.value, m.comma) for m in node.members]
        else:
            entries = [(i.value.start, i.value, i.comma) for i in node.items]
        start, value, comma = entries[index]
        end = value.end if comma is None else comma + 1
        prev_comma = entries[index - 1][2] if index > 0 and comma is None else None
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        own_line = (
            line_end >= 0
            and not text[line_start:start].strip(" \t")
            and not text[end:line_end].strip(" \t\r")
        )
        if own_line:
            # The entry had its lines to itself: they go, and so does the comma before it
            # when it was the last entry.
            new = text[:line_start] + text[line_end + 1 :]
            if prev_comma is not None:
                new = new[:prev_comma] + new[prev_comma + 1 :]
        elif prev_comma is not None:
            new = text[:prev_comma] + text[end:]  # "a, b" -> "a"
        else:
            if text[end : end + 1] == " ":
                end += 1
            new = text[:start] + text[end:]
        self._text = new
        self._reparse()
        if len(entries) == 1:
            emptied = self._find_at(node.start)
            if emptied is not None and not self._text[emptied.start + 1 : emptied.end - 1].strip(
                _WS
            ):
                self._splice(emptied.start + 1, emptied.end - 1, "")

    def _find_at(self, start: int) -> _Node | None:
        """The container that starts at ``start`` (positions before an edit's cut hold)."""
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node is None:
                continue
            if node.start == start and node.kind != "scalar":
                return node
            stack.extend(m.value for m in node.members)
            stack.extend(i.value for i in node.items)
        return None


def _nest(path: Path, value: Any) -> Any:
    for step in reversed(list(path)):
        value = {step: value}
    return value


def _shape_error(path: Path) -> JsoncError:
    where = ".".join(str(p) for p in path) or "the top level"
    return JsoncError(f"{where} is not an object", 0, 0)


def _render(value: Any, unit: str, newline: str, indent: str = "") -> str:
    rendered = json.dumps(value, ensure_ascii=False, indent=unit)
    return rendered.replace("\n", newline + indent)


def _only_comment(rest: str) -> bool:
    stripped = rest.strip(" \t\r")
    if not stripped:
        return False
    if stripped.startswith("//"):
        return True
    return stripped.startswith("/*") and stripped.endswith("*/") and "*/" not in stripped[2:-2]


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line holding ``pos``."""
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    """The file's indentation step: a tab, or the smallest run of leading spaces (default 2)."""
    widths = []
    for line in text.split("\n"):  # not splitlines: strings may hold U+0085 or U+2028
        body = line.lstrip(" \t")
        if not body or len(body) == len(line):
            continue
        lead = line[: len(line) - len(body)]
        if lead.startswith("\t"):
            return "\t"
        widths.append(len(lead))
    return " " * min(widths) if widths else "  "
