"""Response shapes shared by the service and every front end, and pure formatting helpers.

A leaf package: it imports nothing from the vault, store or crypto, so a front end can build and
render these shapes without loading the domain.

::

    kinds.py     Kind, KINDS, parse_kind: the closed set of asset kinds
    assets.py    Saved, AssetView (ContentView, FileInfo), HistoryEntry, Summary
    vaults.py    VaultInfo
    graph.py     Link, GraphNode, Graph and the visibility projection; DOT and tree renderings
    cards.py     the card type schema: FieldSpec, CardType, built-in types, metadata parsing
    verify.py    Problem: what a vault verification reports
    format.py    format_size, format_limit, short_ids
    encoding.py  base64url for bytes inside requests and responses
"""

from memories.views.assets import AssetView, ContentView, FileInfo, HistoryEntry, Saved, Summary
from memories.views.cards import BUILTIN_CARD_TYPES, CardType, FieldSpec
from memories.views.encoding import b64u_decode, b64u_encode
from memories.views.format import format_limit, format_size, short_ids
from memories.views.graph import DEFAULT_RELATION, Graph, GraphNode, Link, parse_relation
from memories.views.kinds import KINDS, Kind, parse_kind
from memories.views.vaults import VaultInfo
from memories.views.verify import PROBLEM_KINDS, Problem, ProblemKind

__all__ = [
    "BUILTIN_CARD_TYPES",
    "DEFAULT_RELATION",
    "KINDS",
    "PROBLEM_KINDS",
    "AssetView",
    "CardType",
    "ContentView",
    "FieldSpec",
    "FileInfo",
    "Graph",
    "GraphNode",
    "HistoryEntry",
    "Kind",
    "Link",
    "Problem",
    "ProblemKind",
    "Saved",
    "Summary",
    "VaultInfo",
    "b64u_decode",
    "b64u_encode",
    "format_limit",
    "format_size",
    "parse_kind",
    "parse_relation",
    "short_ids",
]
