"""The vault domain: identities, vaults and policies, assets and their signed revision DAG,
cards, links and the safe projections every front end shows."""

from memories.vault.cards import BUILTIN_CARD_TYPES, CardType, FieldSpec
from memories.vault.content import Content, FilePayload, Kind, make_content
from memories.vault.graph import Graph, GraphNode, Link
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.operations import initialize
from memories.vault.policy import Policy
from memories.vault.revision import Revision
from memories.vault.summary import Summary
from memories.vault.vault import Vaults
from memories.vault.views import AssetView, HistoryEntry, Saved, VaultInfo

__all__ = [
    "BUILTIN_CARD_TYPES",
    "AssetView",
    "CardType",
    "Content",
    "DeviceCertificate",
    "FieldSpec",
    "FilePayload",
    "Graph",
    "GraphNode",
    "HistoryEntry",
    "Kind",
    "Link",
    "LocalIdentity",
    "Policy",
    "Revision",
    "Saved",
    "Summary",
    "VaultInfo",
    "Vaults",
    "initialize",
    "make_content",
]
