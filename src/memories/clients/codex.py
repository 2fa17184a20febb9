"""OpenAI Codex CLI: ``[mcp_servers.NAME]`` tables in ``$CODEX_HOME/config.toml``
(default ``~/.codex/config.toml``), edited with tomlkit so comments and layout stay.

Codex expands no variables in its config, so only the user scope is offered: a project's
``.codex/config.toml`` would have to carry a user's absolute paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table
from tomlkit.toml_document import TOMLDocument

from memories.clients.base import OUR_NAMES, Client, Place, Scope, Server, Target, is_ours
from memories.clients.errors import ForeignEntryError, UnreadableConfigError
from memories.clients.files import config_lines

__all__ = ["Codex"]

#: Codex waits 10 s for a server by default; the first start may also start the daemon.
STARTUP_TIMEOUT_SEC = 30


def _parse(text: str | None, where: Path) -> TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as exc:
        line = getattr(exc, "line", None)
        at = f" at line {line}" if line else ""
        raise UnreadableConfigError(
            f"{where} is not valid TOML{at}; fix it first, nothing was changed"
        ) from None


def _servers(doc: TOMLDocument, where: Path) -> Table | None:
    found = doc.get("mcp_servers")
    if found is None:
        return None
    if isinstance(found, InlineTable):
        raise UnreadableConfigError(
            f"mcp_servers in {where} is an inline table; write it as [mcp_servers.NAME] "
            "tables to let memories edit it (nothing was changed)"
        )
    if not isinstance(found, Table):
        raise UnreadableConfigError(f"mcp_servers in {where} is not a table; nothing was changed")
    return found


def _argv(entry: Any) -> list[Any]:
    if not isinstance(entry, dict):
        return []
    command, args = entry.get("command"), entry.get("args", [])
    if isinstance(command, str) and isinstance(args, list):
        return [command, *args]
    return []


def _table(server: Server) -> Table:
    table = tomlkit.table()
    table.add("command", server.command)
    table.add("args", list(server.args))
    table.add("startup_timeout_sec", STARTUP_TIMEOUT_SEC)
    return table


_HEADER = re.compile(r"^\s*\[")
_OUR_HEADER = r"^\s*\[\s*mcp_servers\s*\.\s*{name}\s*(\]|\.)"


def _is_header(line: str) -> bool:
    return bool(_HEADER.match(line))


def _skippable(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _block(servers: Sequence[Server]) -> str:
    """Our tables as TOML text, each after a blank line."""
    parts = []
    for server in servers:
        inner = tomlkit.document()
        wrapper = tomlkit.table(is_super_table=True)
        wrapper.append(server.name, _table(server))
        inner.append("mcp_servers", wrapper)
        parts.append("\n" + tomlkit.dumps(inner))
    return "".join(parts)


def _insert_text(text: str, block: str) -> str | None:
    """``text`` with ``block`` right after the body of its last ``[mcp_servers…]`` table,
    before any blank lines and comments that lead into the next table (they belong to it).
    None when the file has no such header (then the caller lets tomlkit place it)."""
    lines = config_lines(text)
    last = None
    for index, line in enumerate(lines):
        if re.match(r"^\s*\[\s*mcp_servers\s*[\].]", line):
            last = index
    if last is None:
        return None
    end = last + 1
    while end < len(lines) and not _is_header(lines[end]):
        end += 1
    while end > last + 1 and _skippable(lines[end - 1]):
        end -= 1
    head = "".join(lines[:end])
    if head and not head.endswith("\n"):
        head += "\n"
    return head + block + "".join(lines[end:])


def _remove_text(text: str, name: str) -> str:
    """``text`` without the ``[mcp_servers.NAME]`` table (and its sub-tables) and the blank
    line before it; comments after its last key stay (they lead into what follows)."""
    lines = config_lines(text)
    ours = re.compile(_OUR_HEADER.format(name=re.escape(name)))
    keep: list[str] = []
    index = 0
    while index < len(lines):
        if not ours.match(lines[index]):
            keep.append(lines[index])
            index += 1
            continue
        end = index + 1
        while end < len(lines) and (not _is_header(lines[end]) or ours.match(lines[end])):
            end += 1
        while end > index + 1 and _skippable(lines[end - 1]):
            end -= 1
        if keep and not keep[-1].strip():
            keep.pop()
        index = end
    return "".join(keep)


class Codex(Client):
    name: ClassVar[str] = "codex"
    title: ClassVar[str] = "Codex"
    scopes: ClassVar[tuple[Scope, ...]] = ("user",)

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        codex_home = place.env.get("CODEX_HOME")
        folder = Path(codex_home) if codex_home and os.path.isabs(codex_home) else None
        return Target((folder or place.home / ".codex") / "config.toml")

    def connect(
        self, text: str | None, servers: Sequence[Server], scope: Scope, place: Place, where: Path
    ) -> str:
        doc = _parse(text, where)
        table = _servers(doc, where)
        for server in servers:
            current = None if table is None else table.get(server.name)
            if current is not None and not is_ours(server.name, _argv(current)):
                raise ForeignEntryError(
                    f"{where} already has an MCP server named {server.name!r} that is not "
                    "ours; rename or remove it, then connect again (nothing was changed)"
                )
        missing = [s for s in servers if table is None or s.name not in table]
        if table is not None:
            for server in servers:
                current = table.get(server.name)
                if current is not None and current.unwrap() != _table(server).unwrap():
                    for key, value in _table(server).items():
                        current[key] = value
        text = tomlkit.dumps(doc) if table is not None else (text or "")
        if not missing:
            return text
        block = _block(missing)
        placed = _insert_text(text, block)
        if placed is None:
            body = text.rstrip("\n")
            placed = (body + "\n" if body else "") + block.removeprefix("" if body else "\n")
        expected = _parse(text, where).unwrap()
        expected.setdefault("mcp_servers", {}).update({s.name: _table(s).unwrap() for s in missing})
        if _parse(placed, where).unwrap() != expected:
            raise UnreadableConfigError(
                f"{where}: could not place [mcp_servers] entries safely; nothing was changed"
            )
        return placed

    def disconnect(self, text: str | None, scope: Scope, place: Place, where: Path) -> str:
        doc = _parse(text, where)
        table = _servers(doc, where)
        if table is None:
            return text or ""
        ours = [name for name in OUR_NAMES if name in table and is_ours(name, _argv(table[name]))]
        if not ours:
            return text or ""
        expected = doc.unwrap()
        for name in ours:
            del expected["mcp_servers"][name]
        if not expected["mcp_servers"] and table.is_super_table():
            del expected["mcp_servers"]
        result = text or ""
        for name in ours:
            result = _remove_text(result, name)
        if _parse(result, where).unwrap() == expected:
            return result
        # An unusual layout (quoted names, dotted keys): let tomlkit take the entries out.
        for name in ours:
            del table[name]
        if len(table) == 0 and table.is_super_table():
            del doc["mcp_servers"]
        return tomlkit.dumps(doc)
