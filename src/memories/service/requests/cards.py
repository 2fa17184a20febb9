"""Requests about cards, card types and the links between cards."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, StringConstraints

from memories.service.requests.base import (
    MAX_LIST_ITEMS,
    METADATA_HELP,
    VAULT_HELP,
    Body,
    Metadata,
    Name,
    Needs,
    Ref,
    RequestModel,
    Source,
    StrictModel,
    Tags,
    Text,
    Title,
)

__all__ = [
    "CardPutRequest",
    "CardRequest",
    "CardTypeDefineRequest",
    "CardTypesRequest",
    "FieldDefinition",
    "GraphRequest",
    "LinkRequest",
    "UnlinkRequest",
]


class FieldDefinition(StrictModel):
    """One metadata field of a user-defined card type."""

    name: Name = Field(description="1 to 40 lowercase letters, digits or _")
    type: Annotated[str, StringConstraints(min_length=1, max_length=40)] = Field(
        description="string, text, integer, number, boolean, date, url or string_list"
    )
    required: bool = False
    description: Annotated[str, StringConstraints(max_length=1000)] = ""
    choices: Annotated[list[Text], Field(max_length=MAX_LIST_ITEMS)] | None = Field(
        default=None, description="allowed values of a string field"
    )
    minimum: int | float | None = Field(default=None, description="for integer and number fields")
    maximum: int | float | None = Field(default=None, description="for integer and number fields")
    format: Annotated[str, StringConstraints(max_length=40)] | None = Field(
        default=None, description="env_name: an environment variable name (string fields)"
    )


class CardPutRequest(RequestModel):
    """Create a card of a built-in or user-defined type."""

    NEEDS = Needs(role="editor", mcp="write", audit_failures=True)
    RESPONSE = "Saved"

    op: Literal["card_put"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    title: Title = Field(repr=False)
    card_type: Name = Field(description="knowledge, brain, persona, protected_card or defined")
    metadata: Metadata | None = Field(default=None, repr=False, description=METADATA_HELP)
    body: Body = Field(default="", repr=False)
    tags: Tags | None = Field(default=None, repr=False)
    source: Source | None = Field(default=None, repr=False)
    private: bool = False


class CardTypesRequest(RequestModel):
    """The card types a vault knows: built-in and defined."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = "`{card_types: [CardType]}`"

    op: Literal["card_types"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)


class CardTypeDefineRequest(RequestModel):
    """Define a card type in a vault."""

    NEEDS = Needs(role="editor", mcp="write", audit_failures=True)
    RESPONSE = "CardType"

    op: Literal["card_type_define"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    name: Name = Field(description="1 to 40 lowercase letters, digits, _ or -")
    fields: Annotated[list[FieldDefinition], Field(max_length=64)]
    description: Annotated[str, StringConstraints(max_length=1000)] = ""


class LinkRequest(RequestModel):
    """Add a directed link between two cards of one vault."""

    NEEDS = Needs(
        elevation="private",
        role="editor",
        mcp="write",
        subjects=("source", "target"),
        audit_failures=True,
    )
    RESPONSE = "`{source, target, relation}`"

    op: Literal["link"]
    source: Ref = Field(description="card id or prefix")
    target: Ref = Field(description="card id or prefix")
    relation: Text | None = Field(default=None, description="defaults to related")


class UnlinkRequest(RequestModel):
    """Remove links from source to target (of one relation, or all)."""

    NEEDS = Needs(
        elevation="private", role="editor", mcp="write", subjects=("source",), audit_failures=True
    )
    RESPONSE = "`{removed: N}`"

    op: Literal["unlink"]
    source: Ref
    target: Ref
    relation: Text | None = None


class GraphRequest(RequestModel):
    """A vault's visible cards and the links between them."""

    NEEDS = Needs(role="reader", mcp="read")
    RESPONSE = "`{nodes, edges}`"

    op: Literal["graph"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)


CardRequest: TypeAlias = (
    CardPutRequest
    | CardTypesRequest
    | CardTypeDefineRequest
    | LinkRequest
    | UnlinkRequest
    | GraphRequest
)
