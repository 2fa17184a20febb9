"""Asset state: the small, mutable record that points into an asset's revision DAG.

The DAG itself lives in write-once revision blobs; this record keeps what views need without
reading them: the current heads (revisions no other revision names as a parent), counts, and a
summary of the newest head (title, tags, card type, flags) plus the card's outgoing links.
Several heads mean a conflict; a single tombstone head means the asset is deleted.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from memories.crypto import canonical_bytes
from memories.errors import IntegrityError
from memories.vault.content import Content
from memories.views.graph import Link
from memories.views.kinds import KINDS, Kind

__all__ = ["ASSET_TAG", "AssetState", "advance_heads", "newest_first"]

ASSET_TAG = "memories.asset"


def advance_heads(heads: Iterable[str], parents: Iterable[str], new: str) -> tuple[str, ...]:
    """The heads after adding revision ``new`` with ``parents``: consumed parents leave."""
    return tuple(sorted((set(heads) - set(parents)) | {new}))


def newest_first(revisions: Mapping[str, tuple[str, Sequence[str]]]) -> list[str]:
    """Order revision ids (id -> (created_at, parents)) newest first, every child before its
    parents.

    Time alone cannot order a DAG: devices' clocks disagree and one device may write several
    revisions within a millisecond. So the next revision is always the newest (by creation time,
    then id) of those whose children are all placed. Raises ``IntegrityError`` when a parent is
    not among ``revisions``.
    """
    ranked = sorted(revisions, key=lambda rid: (revisions[rid][0], rid))
    rank = {rid: position for position, rid in enumerate(ranked)}
    children = dict.fromkeys(revisions, 0)
    for _, parents in revisions.values():
        for parent in parents:
            if parent not in children:
                raise IntegrityError("a revision's parent is missing")
            children[parent] += 1
    ready = [-rank[rid] for rid, count in children.items() if count == 0]
    heapq.heapify(ready)
    ordered: list[str] = []
    while ready:
        rid = ranked[-heapq.heappop(ready)]
        ordered.append(rid)
        for parent in revisions[rid][1]:
            children[parent] -= 1
            if children[parent] == 0:
                heapq.heappush(ready, -rank[parent])
    if len(ordered) != len(revisions):
        raise IntegrityError("an asset's history has a cycle")
    return ordered


@dataclass(frozen=True)
class AssetState:
    asset_id: str
    vault_id: str
    kind: Kind
    heads: tuple[str, ...]
    newest: str  # the most recently written head
    created_at: str
    updated_at: str
    revisions: int
    title: str
    tags: tuple[str, ...]
    card_type: str | None
    private: bool
    tombstone: bool  # the newest head is a tombstone
    author: str  # user fingerprint of the newest head's author
    links: tuple[Link, ...] = field(default=())

    @property
    def conflicted(self) -> bool:
        return len(self.heads) > 1

    @property
    def deleted(self) -> bool:
        return self.tombstone and not self.conflicted

    def after(
        self,
        revision_id: str,
        parents: Iterable[str],
        content: Content | None,
        at: str,
        author: str,
    ) -> AssetState:
        """This state once revision ``revision_id`` (content None: a tombstone) is added."""
        moved = replace(
            self,
            heads=advance_heads(self.heads, parents, revision_id),
            newest=revision_id,
            updated_at=at,
            revisions=self.revisions + 1,
            author=author,
            tombstone=content is None,
        )
        if content is None:  # a tombstone keeps the last live summary for history views
            return moved
        return replace(
            moved,
            title=content.title,
            tags=content.tags,
            card_type=content.card_type,
            private=content.private,
        )

    @classmethod
    def first(
        cls,
        *,
        asset_id: str,
        vault_id: str,
        kind: Kind,
        revision_id: str,
        content: Content,
        at: str,
        author: str,
    ) -> AssetState:
        return cls(
            asset_id=asset_id,
            vault_id=vault_id,
            kind=kind,
            heads=(revision_id,),
            newest=revision_id,
            created_at=at,
            updated_at=at,
            revisions=1,
            title=content.title,
            tags=content.tags,
            card_type=content.card_type,
            private=content.private,
            tombstone=False,
            author=author,
        )

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": ASSET_TAG,
                "v": 1,
                "asset": self.asset_id,
                "vault": self.vault_id,
                "kind": self.kind,
                "heads": list(self.heads),
                "newest": self.newest,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "revisions": self.revisions,
                "title": self.title,
                "tags": list(self.tags),
                "card_type": self.card_type,
                "private": self.private,
                "tombstone": self.tombstone,
                "author": self.author,
                "links": [[link.target, link.relation] for link in self.links],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> AssetState:
        """Raises ``IntegrityError`` for a malformed record."""
        try:
            doc = json.loads(data)
            if doc.get("t") != ASSET_TAG or doc.get("kind") not in KINDS:
                raise ValueError("not an asset")
            asset_id = str(doc["asset"])
            return cls(
                asset_id=asset_id,
                vault_id=str(doc["vault"]),
                kind=doc["kind"],
                heads=tuple(str(h) for h in doc["heads"]),
                newest=str(doc["newest"]),
                created_at=str(doc["created_at"]),
                updated_at=str(doc["updated_at"]),
                revisions=int(doc["revisions"]),
                title=str(doc["title"]),
                tags=tuple(str(t) for t in doc["tags"]),
                card_type=None if doc["card_type"] is None else str(doc["card_type"]),
                private=bool(doc["private"]),
                tombstone=bool(doc["tombstone"]),
                author=str(doc["author"]),
                links=tuple(Link(asset_id, str(t), str(r)) for t, r in doc["links"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("an asset record is malformed") from exc
