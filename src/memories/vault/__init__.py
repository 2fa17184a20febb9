"""The vault domain: identities, vaults and policies, assets and their signed revision DAG,
cards and links, verification, and the commit observers others subscribe to.

::

    vault.py      Vaults: the composition the service uses
    base.py       shared core: caches, resolution, decryption, history walks, the commit path
    edit.py       create_vault, define_card_type, put, update, tombstone, resolve
    listing.py    get, file_payload, history, diff, list_assets, conflicts, card_types
    links.py      link, unlink, graph
    verify.py     verify_vaults: every record checked, problems reported, blob keys collected
    replicate.py  export_revision, accept (revisions from other devices)
    events.py     CommitEvent and the observers search and sync subscribe to
    keys.py       KeyRing: epoch keys in wipeable buffers
    content.py    Content, FilePayload, make_content (the user-input gate)
    filebody.py   the revision plaintext layout; FileSealer / FileOpener (files chunk by chunk)
    files.py      start/finish_file_upload (staged, one commit), open_file (ranged reads)
    assets.py     AssetState: heads and summary of one asset's DAG
    revision.py policy.py identity.py records.py operations.py diff.py summary.py

The response shapes (views, summaries, graphs, card types, problems) live in
:mod:`memories.views`; they are re-exported here for the domain's callers.
"""

from memories.vault.content import Content, FilePayload, Kind, make_content
from memories.vault.events import ACTIONS, Action, AssetChange, CommitEvent, CommitObserver
from memories.vault.filebody import FileOpener
from memories.vault.files import FileUpload
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.operations import initialize
from memories.vault.policy import Policy
from memories.vault.revision import Revision
from memories.vault.vault import Vaults
from memories.vault.verify import Verification, verify_vaults
from memories.views.assets import AssetView, HistoryEntry, Saved, Summary
from memories.views.cards import BUILTIN_CARD_TYPES, CardType, FieldSpec
from memories.views.graph import Graph, GraphNode, Link
from memories.views.vaults import VaultInfo
from memories.views.verify import Problem

__all__ = [
    "ACTIONS",
    "BUILTIN_CARD_TYPES",
    "Action",
    "AssetChange",
    "AssetView",
    "CardType",
    "CommitEvent",
    "CommitObserver",
    "Content",
    "DeviceCertificate",
    "FieldSpec",
    "FileOpener",
    "FilePayload",
    "FileUpload",
    "Graph",
    "GraphNode",
    "HistoryEntry",
    "Kind",
    "Link",
    "LocalIdentity",
    "Policy",
    "Problem",
    "Revision",
    "Saved",
    "Summary",
    "VaultInfo",
    "Vaults",
    "Verification",
    "initialize",
    "make_content",
    "verify_vaults",
]
