"""Registering memories (and urchin) as MCP servers in AI clients' own config files.

Layout:
    jsonc.py        JSON/JSONC parser and splice editor that keeps comments and layout
    files.py        reading a config (link rules), backups, atomic replacement, diffs
    base.py         the servers we register, what "ours" means, the JSON adapter
    claude_code.py codex.py cursor.py gemini.py opencode.py vscode.py   one per client
    setup.py        planning and applying edits; connection names and token references
    tokens.py       per-user token files (0600)

Nothing here talks to the daemon: ``memories.cli.connect_cmd`` mints and revokes the grants.
"""

from __future__ import annotations

from memories.clients.base import OUR_NAMES, Client, Place, Scope, Server, Target
from memories.clients.claude_code import ClaudeCode
from memories.clients.codex import Codex
from memories.clients.cursor import Cursor
from memories.clients.gemini import Gemini
from memories.clients.opencode import OpenCode
from memories.clients.vscode import VsCode

__all__ = [
    "CLIENT_NAMES",
    "OUR_NAMES",
    "Client",
    "Place",
    "Scope",
    "Server",
    "Target",
    "client",
]

_CLIENTS: dict[str, type[Client]] = {
    cls.name: cls for cls in (ClaudeCode, Codex, Cursor, OpenCode, Gemini, VsCode)
}

#: Every client ``memories connect`` knows, in the order the help lists them.
CLIENT_NAMES: tuple[str, ...] = tuple(_CLIENTS)


def client(name: str) -> Client:
    """A fresh adapter for the client called ``name``. Raises ``KeyError`` when unknown."""
    return _CLIENTS[name]()
