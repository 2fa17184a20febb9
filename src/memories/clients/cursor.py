"""Cursor: ``mcpServers`` in ``~/.cursor/mcp.json`` or the project's ``.cursor/mcp.json``.
Cursor expands ``${userHome}`` in a server's command and arguments."""

from __future__ import annotations

from typing import Any, ClassVar

from memories.clients.base import JsonClient, Place, Scope, Server, Target
from memories.clients.jsonc import JsoncDocument

__all__ = ["Cursor"]


class Cursor(JsonClient):
    name: ClassVar[str] = "cursor"
    title: ClassVar[str] = "Cursor"
    scopes: ClassVar[tuple[Scope, ...]] = ("user", "project")
    home_variable: ClassVar[str | None] = "${userHome}"

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        if scope == "project":
            return Target(place.project / ".cursor" / "mcp.json", place.project)
        return Target(place.home / ".cursor" / "mcp.json")

    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        return ["mcpServers"]

    def entry(self, server: Server) -> dict[str, Any]:
        return {"command": server.command, "args": list(server.args)}
