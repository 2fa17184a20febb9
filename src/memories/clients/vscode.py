"""VS Code (Copilot agent mode): top-level ``servers`` in the workspace's ``.vscode/mcp.json``
or the user profile's ``mcp.json`` (``~/.config/Code/User/mcp.json`` on Linux,
``~/Library/Application Support/Code/User/mcp.json`` on macOS). The file is JSONC; VS Code
expands ``${userHome}``."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from memories.clients.base import JsonClient, Place, Scope, Server, Target
from memories.clients.jsonc import JsoncDocument

__all__ = ["VsCode"]


class VsCode(JsonClient):
    name: ClassVar[str] = "vscode"
    title: ClassVar[str] = "VS Code"
    scopes: ClassVar[tuple[Scope, ...]] = ("user", "project")
    home_variable: ClassVar[str | None] = "${userHome}"

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        if scope == "project":
            return Target(place.project / ".vscode" / "mcp.json", place.project)
        if sys.platform == "darwin":
            folder = place.home / "Library" / "Application Support" / "Code" / "User"
        else:
            folder = place.xdg_config() / "Code" / "User"
        return Target(folder / "mcp.json")

    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        return ["servers"]

    def entry(self, server: Server) -> dict[str, Any]:
        return {"type": "stdio", "command": server.command, "args": list(server.args)}
