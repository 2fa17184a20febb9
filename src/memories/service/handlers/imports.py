"""Handler for bulk import: validate every item, then write the valid ones in one commit.

Content rules are the vault's own (:func:`memories.vault.make_content`, the same gate as
``put``): a card type must exist in the vault, protected cards and secret references are never
made here. A batch is one checkpoint (``asset.put`` with ``op: import`` and the count), so a
batch of a thousand memories costs one transaction and one fsync, and the search index sees one
commit event naming every new asset.
"""

from __future__ import annotations

from typing import Any

from memories.crypto import new_id
from memories.errors import UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests.imports import ImportBatchRequest, ImportItem, ImportRequest
from memories.vault import Content, Kind, make_content
from memories.vault.edit import PROTECTED_CARD, Write
from memories.views.cards import BUILTIN_CARD_TYPES

__all__ = ["handle"]

_PROTECTED = "protected cards are made with `memories protected-card`, not imported"


def handle(core: Core, request: ImportRequest, access: Access) -> dict[str, Any]:
    """Import a batch. Raises what ``resolve_vault`` and ``write_batch`` raise (nothing is
    written then); invalid items are reported, not raised."""
    del access  # authorize() checked the caller's role in the vault
    assert isinstance(request, ImportBatchRequest)
    domain = core.domain()
    record = domain.resolve_vault(request.vault)
    types = {**BUILTIN_CARD_TYPES, **{t.name: t for t in domain.card_types(record.vault_id)}}
    writes: list[Write] = []
    errors: list[dict[str, object]] = []
    for position, item in enumerate(request.items):
        try:
            content = _content(item, types, core.settings.max_file_bytes)
        except UsageError as exc:  # the vault's messages name rules, never the content
            errors.append({"item": position, "error": exc.message})
            continue
        kind: Kind = "card" if item.card_type is not None else "memory"
        writes.append(Write(new_id(), kind, content, new=True, vault=record.vault_id))
    saved = []
    if writes and not request.dry_run:
        saved = domain.write_batch(writes, "asset.put", {"op": "import", "count": len(writes)})
    return {
        "imported": 0 if request.dry_run else len(saved),
        "valid": len(writes),
        "failed": len(errors),
        "errors": errors,
        "saved": [domain.short_id(s.asset_id) for s in saved],
        "vault": record.vault_id,
        "dry_run": request.dry_run,
    }


def _content(item: ImportItem, types: dict[str, Any], max_file_bytes: int) -> Content:
    if item.card_type == PROTECTED_CARD:
        raise UsageError(_PROTECTED)
    card_type = None
    if item.card_type is not None:
        card_type = types.get(item.card_type)
        if card_type is None:
            raise UsageError("unknown card type; `memories card types` lists them")
    return make_content(
        "card" if item.card_type is not None else "memory",
        title=item.title,
        body=item.body,
        tags=item.tags or (),
        source=item.source,
        card_type=item.card_type,
        metadata=item.metadata,
        card_type_def=card_type,
        max_file_bytes=max_file_bytes,
    )
