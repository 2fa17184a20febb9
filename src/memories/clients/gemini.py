"""Gemini CLI: ``mcpServers`` in ``~/.gemini/settings.json`` or the project's
``.gemini/settings.json``. Gemini CLI expands ``$VAR`` and ``${VAR}`` in settings strings."""

from __future__ import annotations

from typing import Any, ClassVar

from memories.clients.base import JsonClient, Place, Scope, Server, Target
from memories.clients.jsonc import JsoncDocument

__all__ = ["Gemini"]


class Gemini(JsonClient):
    name: ClassVar[str] = "gemini"
    title: ClassVar[str] = "Gemini CLI"
    scopes: ClassVar[tuple[Scope, ...]] = ("user", "project")
    home_variable: ClassVar[str | None] = "${HOME}"

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        if scope == "project":
            return Target(place.project / ".gemini" / "settings.json", place.project)
        return Target(place.home / ".gemini" / "settings.json")

    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        return ["mcpServers"]

    def entry(self, server: Server) -> dict[str, Any]:
        return {"command": server.command, "args": list(server.args)}
