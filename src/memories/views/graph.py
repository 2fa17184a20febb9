"""The link graph between assets of one vault, projected to what a caller may see.

The caller decides which nodes are visible (current, a single head, not deleted, not private
unless elevated) and marks the rest ``visible=False``. :func:`project_graph` keeps visible nodes
and only the edges whose both endpoints are visible, so nothing about a hidden asset (not even
that a link to it exists) reaches the output. An id that appears more than once is ambiguous and
dropped. Output order is deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memories.errors import NotFoundError, UsageError
from memories.views.kinds import Kind

__all__ = [
    "DEFAULT_RELATION",
    "Graph",
    "GraphNode",
    "Link",
    "parse_relation",
    "project_graph",
]

DEFAULT_RELATION = "related"

_RELATION = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_DOT_LINE_BREAK = re.compile(r"\r\n|\r|\n|\u2028|\u2029")


def parse_relation(text: object) -> str:
    """Return ``text`` as a relation name (blank means ``related``).

    Raises:
        UsageError: the relation is not 1..40 lowercase letters, digits, ``_`` or ``-``
            starting with a letter.
    """
    if text is None:
        return DEFAULT_RELATION
    if not isinstance(text, str):
        raise UsageError("a link relation must be text")
    relation = text.strip() or DEFAULT_RELATION
    if not _RELATION.fullmatch(relation):
        raise UsageError(
            "a link relation is 1 to 40 lowercase letters, digits, _ or -, starting with a letter"
        )
    return relation


@dataclass(frozen=True, slots=True)
class GraphNode:
    """An asset as the graph shows it. ``visible`` is decided by the caller."""

    id: str
    title: str
    card_type: str | None
    kind: Kind
    visible: bool

    def to_dict(self) -> dict[str, object]:
        """JSON form of a visible node (visibility is implied by its presence)."""
        return {"id": self.id, "title": self.title, "card_type": self.card_type, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class Link:
    """A directed edge ``source -> target`` within one vault.

    Raises:
        UsageError: an endpoint is blank, both endpoints are the same asset, or the relation is
            not a valid relation name.
    """

    source: str
    target: str
    relation: str = DEFAULT_RELATION

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not isinstance(self.target, str):
            raise UsageError("link endpoints must be asset ids")
        if not self.source or not self.target:
            raise UsageError("link endpoints must not be blank")
        if self.source == self.target:
            raise UsageError("an asset cannot link to itself")
        if not isinstance(self.relation, str) or not _RELATION.fullmatch(self.relation):
            raise UsageError(
                "a link relation is 1 to 40 lowercase letters, digits, _ or -, "
                "starting with a letter"
            )

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return {"source": self.source, "target": self.target, "relation": self.relation}


def _escape_line(text: str) -> str:
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _dot_quote(text: str) -> str:
    # Backslashes first: DOT gives \N, \G, \l, \r... meanings inside labels. Line breaks become
    # DOT's own \n; other controls become spaces so the statement stays on one line.
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = _DOT_LINE_BREAK.sub(lambda _: "\\n", escaped)
    return '"' + _CONTROL.sub(" ", escaped) + '"'


def _default_label(node: GraphNode) -> str:
    label = _escape_line(node.title)
    if node.card_type is not None:
        label += f" [{_escape_line(node.card_type)}]"
    return f"{label} ({node.id})"


@dataclass(frozen=True)
class Graph:
    """A projected graph: visible nodes and the edges between them, in deterministic order."""

    nodes: tuple[GraphNode, ...]
    edges: tuple[Link, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON form: ``{"nodes": [...], "edges": [...]}``."""
        return {
            "nodes": [node.to_dict() for node in self.nodes],
            "edges": [edge.to_dict() for edge in self.edges],
        }

    def to_dot(self, name: str = "memories") -> str:
        """Graphviz DOT source; every id and label is a quoted, escaped string."""
        lines = [f"digraph {_dot_quote(name)} {{", "  node [shape=box];"]
        for node in self.nodes:
            detail = node.card_type if node.card_type is not None else node.kind
            label = _dot_quote(f"{node.title}\n({detail})")
            lines.append(f"  {_dot_quote(node.id)} [label={label}];")
        for edge in self.edges:
            lines.append(
                f"  {_dot_quote(edge.source)} -> {_dot_quote(edge.target)} "
                f"[label={_dot_quote(edge.relation)}];"
            )
        lines.append("}")
        return "\n".join(lines) + "\n"

    def tree_lines(
        self,
        roots: Sequence[str] | None = None,
        *,
        label: Callable[[GraphNode], str] | None = None,
    ) -> list[str]:
        """Render outgoing links as an indented tree, one line per shown node.

        Each node is expanded once; a node reached again (a cycle or a second parent) is shown
        with `` [see above]`` and not expanded again. Without ``roots``, the nodes without
        incoming links start trees, and any node still unseen afterwards (one inside a cycle)
        starts another, in node order, so every node is expanded exactly once. Edges with a
        relation other than ``related`` are prefixed ``<relation>:``.

        Raises:
            NotFoundError: a requested root is not a visible node of this graph.
        """
        render = label or _default_label
        by_id = {node.id: node for node in self.nodes}
        order = {node.id: index for index, node in enumerate(self.nodes)}
        children: dict[str, list[tuple[str, str]]] = {}
        incoming: set[str] = set()
        for edge in self.edges:
            children.setdefault(edge.source, []).append((edge.target, edge.relation))
            incoming.add(edge.target)
        for kids in children.values():
            kids.sort(key=lambda kid: (order[kid[0]], kid[1]))

        if roots is not None:
            missing = [root for root in roots if root not in by_id]
            if missing:
                raise NotFoundError("a tree root is not a visible asset of this graph")
            starts: list[str] = list(roots)
        else:
            starts = [node.id for node in self.nodes if node.id not in incoming]

        lines: list[str] = []
        expanded: set[str] = set()

        def walk(root: str) -> None:
            # Iterative depth-first walk: a long chain of links must not hit the recursion limit.
            stack: list[tuple[str, str | None, str, str]] = [(root, None, "", "")]
            while stack:
                node_id, relation, line_prefix, child_prefix = stack.pop()
                text = render(by_id[node_id])
                if relation is not None and relation != DEFAULT_RELATION:
                    text = f"{relation}: {text}"
                if node_id in expanded:
                    lines.append(f"{line_prefix}{text} [see above]")
                    continue
                lines.append(line_prefix + text)
                expanded.add(node_id)
                kids = children.get(node_id, [])
                for index in range(len(kids) - 1, -1, -1):
                    target, kid_relation = kids[index]
                    last = index == len(kids) - 1
                    stack.append(
                        (
                            target,
                            kid_relation,
                            child_prefix + ("└── " if last else "├── "),
                            child_prefix + ("    " if last else "│   "),
                        )
                    )

        for root in starts:
            walk(root)
        if roots is None:
            for node in self.nodes:
                if node.id not in expanded:
                    walk(node.id)
        return lines


def project_graph(nodes: Iterable[GraphNode], links: Iterable[Link]) -> Graph:
    """Keep the visible nodes and the links whose both endpoints are visible.

    A node id given more than once is ambiguous and treated as invisible. Nodes are ordered by
    title (case-insensitively, then exactly) and id; edges by source, target and relation;
    duplicate edges are merged.
    """
    node_list = list(nodes)
    counts = Counter(node.id for node in node_list)
    kept = [node for node in node_list if node.visible and counts[node.id] == 1]
    kept.sort(key=lambda node: (node.title.casefold(), node.title, node.id))
    visible = {node.id for node in kept}
    edges = {
        (link.source, link.target, link.relation): link
        for link in links
        if link.source in visible and link.target in visible
    }
    return Graph(nodes=tuple(kept), edges=tuple(edges[key] for key in sorted(edges)))
