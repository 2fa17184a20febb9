"""OpenCode: ``mcp`` in ``opencode.json`` / ``opencode.jsonc`` (user:
``$XDG_CONFIG_HOME/opencode/``; project: its root).

Two shapes exist. Version 1 keeps servers directly under ``mcp`` as ``{"type": "local",
"command": [...], "enabled": true}``; version 2 nests them under ``mcp.servers`` and switches
one off with ``disabled``. The file says which it is: ``mcp.servers`` holding server objects
means version 2; servers directly under ``mcp`` mean version 1; with neither, version 1 (the
shape released OpenCode reads). OpenCode substitutes ``{env:VAR}`` in its config.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from memories.clients.base import JsonClient, Place, Scope, Server, Target
from memories.clients.jsonc import JsoncDocument

__all__ = ["OpenCode", "detect_version"]


def detect_version(doc: JsoncDocument) -> Literal[1, 2]:
    """Which OpenCode config shape ``doc`` uses (1 when it does not say)."""
    mcp = doc.get(["mcp"])
    if not isinstance(mcp, dict):
        return 1
    servers = mcp.get("servers")
    if (
        isinstance(servers, dict)
        and "type" not in servers
        and all(isinstance(entry, dict) for entry in servers.values())
    ):
        return 2
    return 1


class OpenCode(JsonClient):
    name: ClassVar[str] = "opencode"
    title: ClassVar[str] = "OpenCode"
    scopes: ClassVar[tuple[Scope, ...]] = ("user", "project")
    home_variable: ClassVar[str | None] = "{env:HOME}"

    def __init__(self) -> None:
        self._version: Literal[1, 2] = 1

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        folder = place.project if scope == "project" else place.xdg_config() / "opencode"
        root = place.project if scope == "project" else None
        jsonc = folder / "opencode.jsonc"
        if jsonc.exists() or jsonc.is_symlink():
            return Target(jsonc, root)
        return Target(folder / "opencode.json", root)

    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        self._version = detect_version(doc)
        return ["mcp", "servers"] if self._version == 2 else ["mcp"]

    def entry(self, server: Server) -> dict[str, Any]:
        base: dict[str, Any] = {"type": "local", "command": server.argv}
        if self._version == 1:
            base["enabled"] = True
        return base
