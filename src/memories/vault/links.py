"""Links between cards of one vault and the graph projection of them.

A link is a directed edge recorded on its source card's asset record (not in a revision), so
adding or removing one commits that record alone and notifies the observers with the source.
"""

from __future__ import annotations

from dataclasses import replace

from memories.errors import NotFoundError, UsageError
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.records import asset_key
from memories.views.graph import Graph, GraphNode, Link, parse_relation, project_graph

__all__ = ["Linking"]


class Linking(VaultBase):
    """Link, unlink and the visible graph."""

    def _linkable(self, ref: str, what: str) -> AssetState:
        state = self.resolve_asset(ref)
        if state.kind != "card":
            raise UsageError(f"the {what} of a link must be a card")
        if state.deleted:
            raise UsageError(f"the {what} of the link was deleted")
        return state

    def link(self, source: str, target: str, relation: str | None = None) -> Link:
        """Add a directed edge between two live cards of one vault (a no-op when it exists).

        Raises ``UsageError`` for a non-card, deleted or cross-vault endpoint or a bad relation.
        """
        src = self._linkable(source, "source")
        dst = self._linkable(target, "target")
        if src.vault_id != dst.vault_id:
            raise UsageError("links connect cards of the same vault")
        link = Link(src.asset_id, dst.asset_id, parse_relation(relation))
        if link in src.links:
            return link
        new_state = replace(src, links=(*src.links, link))
        m = self.store.mutation()
        m.put(asset_key(src.kind, src.asset_id), new_state.to_bytes())
        self._commit(m, "link.add", [(new_state, None)], source=src.asset_id, target=dst.asset_id)
        return link

    def unlink(self, source: str, target: str, relation: str | None = None) -> int:
        """Remove edges from ``source`` to ``target`` (of ``relation``, or all); returns how many.

        Raises ``NotFoundError`` when there was no such link.
        """
        src = self.resolve_asset(source)
        dst = self.resolve_asset(target)
        wanted = None if relation is None else parse_relation(relation)
        kept = tuple(
            link
            for link in src.links
            if not (link.target == dst.asset_id and wanted in (None, link.relation))
        )
        removed = len(src.links) - len(kept)
        if not removed:
            raise NotFoundError("there is no such link")
        new_state = replace(src, links=kept)
        m = self.store.mutation()
        m.put(asset_key(src.kind, src.asset_id), new_state.to_bytes())
        self._commit(
            m, "link.remove", [(new_state, None)], source=src.asset_id, target=dst.asset_id
        )
        return removed

    def graph(self, vault: str | None = None, *, elevated: bool = False) -> Graph:
        """The vault's cards and links: only current, unambiguous, visible nodes and edges."""
        vault_id = self.resolve_vault(vault).vault_id
        cards = [s for s in self._assets_of("card").values() if s.vault_id == vault_id]
        nodes = [
            GraphNode(
                id=s.asset_id,
                title=s.title,
                card_type=s.card_type,
                kind=s.kind,
                visible=not s.deleted and not s.conflicted and (elevated or not s.private),
            )
            for s in cards
        ]
        return project_graph(nodes, (link for s in cards for link in s.links))
