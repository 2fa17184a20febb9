"""Links between cards of one vault and the graph projection of them.

A link is a directed edge recorded on its source card's asset record (not in a revision), so
adding or removing one commits that record alone and notifies the observers with the source.
That record is local and encrypted, never shared as it is: links leave a device only as a
signed *link set* (:func:`sign_link_set`), one per source card, which a peer checks with
:func:`verify_link_set` against the vault's policy chain (the signer must be allowed to write).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from memories.crypto import b64u_decode, b64u_encode, verify_canonical
from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.policy import Policy, check_write
from memories.vault.records import asset_key
from memories.views.graph import Graph, GraphNode, Link, parse_relation, project_graph

__all__ = ["LINK_SET_TAG", "LinkSet", "Linking", "sign_link_set", "verify_link_set"]

LINK_SET_TAG = "memories.link_set"
_LINK_SET_BAD = "a signed link set is malformed, forged or not allowed by the vault's policy"


@dataclass(frozen=True)
class LinkSet:
    """A verified link set: every outgoing link of one source card, and who signed it."""

    vault_id: str
    source: str
    links: tuple[Link, ...]
    policy: str
    certificate: DeviceCertificate


def sign_link_set(
    identity: LocalIdentity, vault_id: str, policy: Policy, source: str, links: Sequence[Link]
) -> dict[str, object]:
    """The signed record of ``source``'s links, naming the policy entry it is written under."""
    body = {
        "t": LINK_SET_TAG,
        "v": 1,
        "vault": vault_id,
        "source": source,
        "links": sorted([link.target, link.relation] for link in links),
        "policy": policy.id,
        "certificate": identity.certificate.to_dict(),
    }
    return {"link_set": body, "signature": b64u_encode(identity.device.sign_canonical(body))}


def verify_link_set(doc: object, policies: Mapping[str, Policy]) -> LinkSet:
    """Check a signed link set: its form, its certificate and signature, and that the policy it
    names (one of ``policies``, by id) let the signing device write.

    Raises:
        IntegrityError: malformed, forged, an unknown policy, or a signer without write access.
    """
    try:
        if not isinstance(doc, dict) or set(doc) != {"link_set", "signature"}:
            raise ValueError("not a link set")
        body = doc["link_set"]
        if not isinstance(body, dict) or body.get("t") != LINK_SET_TAG or body.get("v") != 1:
            raise ValueError("not a link set")
        cert = DeviceCertificate.from_dict(body["certificate"])
        source = str(body["source"])
        pairs = body["links"]
        links = tuple(Link(source, str(t), parse_relation(r)) for t, r in pairs)
        if sorted([link.target, link.relation] for link in links) != pairs:
            raise ValueError("not canonical")
        signature = b64u_decode(str(doc["signature"]))
        policy = policies[str(body["policy"])]
    except (KeyError, TypeError, ValueError, AttributeError, UsageError, IntegrityError) as exc:
        raise IntegrityError(_LINK_SET_BAD) from exc
    try:
        cert.verify_signature()
        verify_canonical(cert.signing_key, body, signature)
        if policy.vault_id != str(body["vault"]):
            raise IntegrityError(_LINK_SET_BAD)
        check_write(policy, cert.user, cert.device)
    except (IntegrityError, DeniedError) as exc:
        raise IntegrityError(_LINK_SET_BAD) from exc
    return LinkSet(policy.vault_id, source, links, policy.id, cert)


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
