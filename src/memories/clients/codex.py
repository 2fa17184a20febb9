"""OpenAI Codex CLI: ``[mcp_servers.NAME]`` tables in ``$CODEX_HOME/config.toml``
(default ``~/.codex/config.toml``), edited with tomlkit so comments and layout stay.

Codex expands no variables in its config, so only the user scope is offered: a project's
``.codex/config.toml`` would have to carry a user's absolute paths.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table
from tomlkit.toml_document import TOMLDocument

from memories.clients.base import OUR_NAMES, Client, Place, Scope, Server, Target, is_ours
from memories.clients.errors import ForeignEntryError, UnreadableConfigError

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
        if table is None:
            # A new [mcp_servers.*] block goes at the end, after one blank line.
            fresh = tomlkit.document()
            servers_table = tomlkit.table(is_super_table=True)
            for server in servers:
                servers_table.append(server.name, _table(server))
            fresh.append("mcp_servers", servers_table)
            body = (text or "").rstrip("\n")
            return (body + "\n\n" if body else "") + tomlkit.dumps(fresh)
        for server in servers:
            current = table.get(server.name)
            if current is not None and current.unwrap() == _table(server).unwrap():
                continue
            if current is not None:
                for key, value in _table(server).items():
                    current[key] = value
                continue
            new = _table(server)
            new.add(tomlkit.nl())
            table.append(server.name, new)
        return tomlkit.dumps(doc)

    def disconnect(self, text: str | None, scope: Scope, place: Place, where: Path) -> str:
        doc = _parse(text, where)
        table = _servers(doc, where)
        if table is None:
            return text or ""
        removed = False
        for name in OUR_NAMES:
            if name in table and is_ours(name, _argv(table[name])):
                del table[name]
                removed = True
        if not removed:
            return text or ""
        if len(table) == 0 and table.is_super_table():
            del doc["mcp_servers"]
        out = tomlkit.dumps(doc)
        # The blank lines that separated our block from the text before it go with it.
        return out.rstrip("\n") + "\n" if out.strip() else ""
