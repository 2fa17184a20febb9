"""Requests that mint, list and revoke MCP grants. None of them is ever sent over MCP.

Minting needs elevation. The daemon serves every process of this user, so an agent with a
shell (running as that user) could otherwise mint itself an ``allow_all`` grant for every vault
and keep the token after its session ends. With elevation the user types the password once,
in their own terminal, for each client they connect; an agent's commands run in another
session and do not inherit that elevation. Listing shows no secret and revoking only ever
takes access away, so neither needs elevation. None of the three goes over a remote transport.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.grants import MAX_EXPIRES_SECONDS, GrantScope
from memories.service.requests.base import Needs, Ref, RequestModel

__all__ = ["GrantCreateRequest", "GrantListRequest", "GrantRequest", "GrantRevokeRequest"]

GRANT_VIEW = (
    "GrantView `{id, name, scope, vaults: [vault id], created_at, expires_at (or null), "
    "revoked_at (or null)}`"
)
GrantName = Annotated[str, StringConstraints(min_length=1, max_length=64)]
MAX_GRANT_VAULTS = 64


class GrantCreateRequest(RequestModel):
    """Mint an MCP grant: a token that lets one client use the named vaults within a scope.
    The token is returned once and never stored; only its hash is kept."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = f"`{{grant: GrantView, token}}` where {GRANT_VIEW}; `token` is shown only once"

    op: Literal["grant_create"]
    name: GrantName = Field(
        description="1 to 64 letters, digits, spaces or . _ -; unique among live grants"
    )
    vaults: list[Ref] = Field(
        default_factory=list,
        max_length=MAX_GRANT_VAULTS,
        description="vault names, ids or id prefixes; empty: the personal vault",
    )
    scope: GrantScope = Field(description="read, write, read_write, read_write_delete or allow_all")
    expires_seconds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_EXPIRES_SECONDS,
        description="lifetime in seconds (at most ten years); null: until revoked",
    )


class GrantListRequest(RequestModel):
    """List every MCP grant, live, expired and revoked. Tokens are never shown again."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{grants: [GrantView]}`, oldest first"

    op: Literal["grant_list"]


class GrantRevokeRequest(RequestModel):
    """Revoke an MCP grant at once: its connections are refused from their next request, and
    answers still in flight are withheld. Revoking a revoked grant changes nothing."""

    NEEDS = Needs(remote=False, audit_failures=True)
    RESPONSE = "`{grant: GrantView}`"

    op: Literal["grant_revoke"]
    grant: Ref = Field(description="a live grant's name, or a grant id or id prefix")


GrantRequest: TypeAlias = GrantCreateRequest | GrantListRequest | GrantRevokeRequest
