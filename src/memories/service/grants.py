"""MCP grants as the authorizer reads them: which vaults a client may touch, and how.

A grant binds one MCP client to a set of vaults and a *scope*. A scope is a set of
capabilities; each request that MCP may send declares the one capability it needs
(:class:`~memories.service.requests.base.Needs`), and :func:`~memories.service.access.authorize`
checks it against the caller's grant. Requests that declare no MCP capability (credential
values, secret delivery, clipboard, process execution, grant minting, desktop status …) are
never allowed over MCP, whatever the scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

__all__ = ["SCOPE_CAPABILITIES", "Capability", "Grant", "GrantScope"]

#: What one MCP request needs: to read content, to write it, or to delete (tombstone) it.
Capability: TypeAlias = Literal["read", "write", "delete"]

#: The scopes a grant may carry (the spec's Center scopes).
GrantScope: TypeAlias = Literal["read", "write", "read_write", "read_write_delete", "allow_all"]

SCOPE_CAPABILITIES: Final[dict[GrantScope, frozenset[Capability]]] = {
    "read": frozenset({"read"}),
    "write": frozenset({"write"}),
    "read_write": frozenset({"read", "write"}),
    "read_write_delete": frozenset({"read", "write", "delete"}),
    # Everything MCP may ever do; the always-denied requests stay denied.
    "allow_all": frozenset({"read", "write", "delete"}),
}


@dataclass(frozen=True)
class Grant:
    """An authenticated MCP client's grant: its name, scope and vault ids (None: all vaults)."""

    name: str
    scope: GrantScope
    vaults: frozenset[str] | None = None

    def allows(self, capability: Capability) -> bool:
        return capability in SCOPE_CAPABILITIES[self.scope]

    def covers(self, vault_id: str) -> bool:
        return self.vaults is None or vault_id in self.vaults
