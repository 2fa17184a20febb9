"""Claude Code: MCP servers in ``~/.claude.json`` (user scope: top-level ``mcpServers``; local
scope: ``projects."<absolute project path>".mcpServers``) or the project's ``.mcp.json``; the
``SessionStart`` context hook in ``settings.json`` (``~/.claude/settings.json``,
``.claude/settings.json`` or ``.claude/settings.local.json``).

``CLAUDE_CONFIG_DIR``, when set, holds both ``.claude.json`` and ``settings.json``. Claude
Code expands ``${VAR}`` in ``.mcp.json``, so a shared file names the token file under
``${HOME}``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path, PurePath
from typing import Any, ClassVar

from memories.clients.base import JsonClient, Place, Scope, Server, Target, parse_json
from memories.clients.errors import UnreadableConfigError
from memories.clients.jsonc import JsoncDocument, JsoncError

__all__ = ["HOOK_MATCHER", "HOOK_TIMEOUT", "ClaudeCode", "add_context_hook", "remove_context_hook"]

HOOK_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT = 10


def _config_dir(place: Place) -> Path | None:
    value = place.env.get("CLAUDE_CONFIG_DIR")
    return Path(value) if value and os.path.isabs(value) else None


class ClaudeCode(JsonClient):
    name: ClassVar[str] = "claude-code"
    title: ClassVar[str] = "Claude Code"
    scopes: ClassVar[tuple[Scope, ...]] = ("user", "project", "local")
    home_variable: ClassVar[str | None] = "${HOME}"

    def target(self, scope: Scope, place: Place) -> Target:
        self.check_scope(scope)
        if scope == "project":
            return Target(place.project / ".mcp.json", place.project)
        folder = _config_dir(place) or place.home
        return Target(folder / ".claude.json")

    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        if scope == "local":
            return ["projects", str(place.project), "mcpServers"]
        return ["mcpServers"]

    def entry(self, server: Server) -> dict[str, Any]:
        return {"type": "stdio", "command": server.command, "args": list(server.args)}

    def settings_target(self, scope: Scope, place: Place) -> Target:
        """The ``settings.json`` that holds hooks at ``scope``."""
        self.check_scope(scope)
        if scope == "project":
            return Target(place.project / ".claude" / "settings.json", place.project)
        if scope == "local":
            return Target(place.project / ".claude" / "settings.local.json", place.project)
        folder = _config_dir(place) or place.home / ".claude"
        return Target(folder / "settings.json")


def _is_our_hook(group: Any) -> bool:
    if not isinstance(group, dict):
        return False
    for hook in group.get("hooks") or []:
        command = hook.get("command") if isinstance(hook, dict) else None
        if isinstance(command, str):
            try:
                words = shlex.split(command)
            except ValueError:
                continue
            if len(words) >= 2 and PurePath(words[0]).name == "memories" and words[1] == "context":
                return True
    return False


def _session_start(doc: JsoncDocument, where: Path) -> list[Any]:
    hooks = doc.get(["hooks"])
    if hooks is not None and not isinstance(hooks, dict):
        raise UnreadableConfigError(f"hooks in {where} is not an object; nothing was changed")
    found = doc.get(["hooks", "SessionStart"])
    if found is None:
        return []
    if not isinstance(found, list):
        raise UnreadableConfigError(
            f"hooks.SessionStart in {where} is not a list; nothing was changed"
        )
    return found


def add_context_hook(text: str | None, program: str, where: Path) -> str:
    """``settings.json`` with our ``SessionStart`` hook (running ``<program> context``).

    Raises:
        UnreadableConfigError: the text cannot be parsed or has an unexpected shape.
    """
    doc = parse_json(text, where)
    groups = _session_start(doc, where)
    command = f"{shlex.quote(program)} context"
    ours = {
        "matcher": HOOK_MATCHER,
        "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}],
    }
    try:
        for index, group in enumerate(groups):
            if _is_our_hook(group):
                if group != ours:
                    updated = [*groups[:index], ours, *groups[index + 1 :]]
                    doc.set(["hooks", "SessionStart"], updated)
                return doc.text
        doc.append(["hooks", "SessionStart"], ours)
    except JsoncError as exc:
        raise UnreadableConfigError(f"{where}: {exc.reason}; nothing was changed") from None
    return doc.text


def remove_context_hook(text: str | None, where: Path) -> str:
    """``settings.json`` without our ``SessionStart`` hook (others' hooks kept).

    Raises:
        UnreadableConfigError: the text cannot be parsed or has an unexpected shape.
    """
    doc = parse_json(text, where)
    groups = _session_start(doc, where)
    for index in reversed(range(len(groups))):
        if _is_our_hook(groups[index]):
            doc.delete(["hooks", "SessionStart", index])
    for path in (["hooks", "SessionStart"], ["hooks"]):
        if doc.get(path) in ({}, []):
            doc.delete(path)
    return doc.text
