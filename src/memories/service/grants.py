"""MCP grants as the authorizer reads them: which vaults a client may touch, and how.

A grant binds one MCP client to a set of vaults and a *scope*. A scope is a set of
capabilities; each request that MCP may send declares the one capability it needs
(:class:`~memories.service.requests.base.Needs`), and :func:`~memories.service.access.authorize`
checks it against the caller's grant. Requests that declare no MCP capability (credential
values, secret delivery, clipboard, process execution, grant minting, desktop status …) are
never allowed over MCP, whatever the scope.

This module is a leaf (the request models and the CLI import it); the stored records, the
tokens and their hashes are in :mod:`memories.service.grant_records`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

__all__ = [
    "GRANT_SCOPES",
    "MAX_EXPIRES_SECONDS",
    "SCOPE_CAPABILITIES",
    "TOKEN_PREFIX",
    "Capability",
    "Grant",
    "GrantScope",
]

#: What one MCP request needs: to read content, to write it, or to delete (tombstone) it.
Capability: TypeAlias = Literal["read", "write", "delete"]

#: The scopes a grant may carry (the spec's Center scopes).
GrantScope: TypeAlias = Literal["read", "write", "read_write", "read_write_delete", "allow_all"]
GRANT_SCOPES: Final[tuple[GrantScope, ...]] = get_args(GrantScope)

SCOPE_CAPABILITIES: Final[dict[GrantScope, frozenset[Capability]]] = {
    "read": frozenset({"read"}),
    "write": frozenset({"write"}),
    "read_write": frozenset({"read", "write"}),
    "read_write_delete": frozenset({"read", "write", "delete"}),
    # Everything MCP may ever do; the always-denied requests stay denied.
    "allow_all": frozenset({"read", "write", "delete"}),
}

#: Every token starts with this, so secret scanners (and people) recognise one in a paste.
TOKEN_PREFIX: Final = "mem_grant_"  # noqa: S105 - a marker, not a secret
#: Longest lifetime ``--expires`` may give: ten years.
MAX_EXPIRES_SECONDS: Final = 10 * 366 * 24 * 3600


@dataclass(frozen=True)
class Grant:
    """An authenticated MCP client's grant: its name, scope and vault ids (None: all vaults).

    ``id`` names the stored grant it was read from; the service re-reads that record before
    every request and before every delivery. A grant without an id (built in-process, by a
    test or a tool that composes the service itself) is taken as it is.
    """

    name: str
    scope: GrantScope
    vaults: frozenset[str] | None = None
    id: str | None = None

    def allows(self, capability: Capability) -> bool:
        return capability in SCOPE_CAPABILITIES[self.scope]

    def covers(self, vault_id: str) -> bool:
        return self.vaults is None or vault_id in self.vaults
