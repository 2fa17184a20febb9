"""Requests about bulk import: many new memories or cards in one commit."""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field

from memories.service.requests.base import (
    VAULT_HELP,
    Body,
    Metadata,
    Needs,
    RequestModel,
    Source,
    StrictModel,
    Tags,
    Text,
    Title,
)

__all__ = ["MAX_IMPORT_ITEMS", "ImportBatchRequest", "ImportItem", "ImportRequest"]

#: Items per batch; the CLI sends a large import as many batches (one commit each).
MAX_IMPORT_ITEMS: Final = 1000


class ImportItem(StrictModel):
    """One memory (or, with ``card_type``, one card) to create."""

    title: Title = Field(repr=False)
    body: Body = Field(default="", repr=False)
    tags: Tags | None = Field(default=None, repr=False)
    source: Source | None = Field(default=None, repr=False)
    card_type: Text | None = Field(default=None, description="makes the item a card")
    metadata: Metadata | None = Field(default=None, repr=False, description="cards only")


class ImportBatchRequest(RequestModel):
    """Create up to 1,000 memories or cards in one commit. Every item is validated first;
    valid items are written together (all or none), invalid ones are reported by position
    with a reason that never quotes their content. ``dry_run`` validates only."""

    NEEDS = Needs(role="editor", audit_failures=True)
    RESPONSE = "`{imported, failed, errors: [{item, error}], saved: [short ids], dry_run}`"

    op: Literal["import_batch"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    items: Annotated[list[ImportItem], Field(min_length=1, max_length=MAX_IMPORT_ITEMS)]
    dry_run: bool = False


ImportRequest: TypeAlias = ImportBatchRequest
