from __future__ import annotations

import random
import re

import pytest

from memories.errors import NotFoundError, UsageError
from memories.views.graph import Graph, GraphNode, Link, parse_relation, project_graph


def node(id_: str, title: str | None = None, *, visible: bool = True) -> GraphNode:
    return GraphNode(
        id=id_, title=title or id_.upper(), card_type="knowledge", kind="card", visible=visible
    )


def test_invisible_endpoints_drop_their_edges_and_hidden_nodes_disappear() -> None:
    # The caller marks private, deleted and conflicted assets invisible.
    nodes = [
        node("a"),
        node("b"),
        node("private", visible=False),
        node("tombstoned", visible=False),
        node("conflicted", visible=False),
    ]
    links = [
        Link("a", "b"),
        Link("a", "private"),
        Link("private", "b"),
        Link("tombstoned", "conflicted"),
        Link("b", "conflicted", "depends_on"),
        Link("ghost", "a"),
    ]
    graph = project_graph(nodes, links)
    assert [n.id for n in graph.nodes] == ["a", "b"]
    assert graph.edges == (Link("a", "b"),)
    flattened = repr(graph.to_dict())
    for hidden in ("private", "tombstoned", "conflicted", "ghost"):
        assert hidden not in flattened


def test_an_id_given_twice_is_ambiguous_and_hidden() -> None:
    graph = project_graph([node("a"), node("b"), node("b", "Other B")], [Link("a", "b")])
    assert [n.id for n in graph.nodes] == ["a"]
    assert graph.edges == ()


def test_order_is_by_title_then_id_and_edges_are_sorted_and_deduplicated() -> None:
    nodes = [node("3", "beta"), node("2", "Alpha"), node("1", "beta"), node("4", "alpha")]
    links = [
        Link("3", "1", "see_also"),
        Link("1", "3"),
        Link("1", "2"),
        Link("1", "3"),
        Link("1", "3", "depends_on"),
    ]
    graph = project_graph(nodes, reversed(links))
    assert [(n.title, n.id) for n in graph.nodes] == [
        ("Alpha", "2"),
        ("alpha", "4"),
        ("beta", "1"),
        ("beta", "3"),
    ]
    assert [(e.source, e.target, e.relation) for e in graph.edges] == [
        ("1", "2", "related"),
        ("1", "3", "depends_on"),
        ("1", "3", "related"),
        ("3", "1", "see_also"),
    ]


def test_to_dict_lists_nodes_and_edges() -> None:
    graph = project_graph(
        [
            GraphNode("m1", "Memo", None, "memory", True),
            GraphNode("c1", "Card", "persona", "card", True),
        ],
        [Link("c1", "m1", "cites")],
    )
    assert graph.to_dict() == {
        "nodes": [
            {"id": "c1", "title": "Card", "card_type": "persona", "kind": "card"},
            {"id": "m1", "title": "Memo", "card_type": None, "kind": "memory"},
        ],
        "edges": [{"source": "c1", "target": "m1", "relation": "cites"}],
    }


@pytest.mark.parametrize(
    ("source", "target", "relation", "message"),
    [
        ("a", "a", "related", "cannot link to itself"),
        ("", "b", "related", "must not be blank"),
        ("a", "b", "Related", "a link relation is 1 to 40"),
        ("a", "b", "depends on", "a link relation"),
        ("a", "b", "x" * 41, "a link relation"),
        ("a", "b", "", "a link relation"),
    ],
)
def test_bad_links_are_refused(source: str, target: str, relation: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Link(source, target, relation)


def test_parse_relation_defaults_to_related() -> None:
    assert parse_relation(None) == "related"
    assert parse_relation("  ") == "related"
    assert parse_relation(" depends_on ") == "depends_on"
    with pytest.raises(UsageError, match="a link relation"):
        parse_relation("Depends-On!")


def test_dot_output_escapes_quotes_backslashes_and_line_breaks() -> None:
    tricky = GraphNode(
        id='id"1',
        title='He said "hi"\nthen \\left\r\x07',
        card_type=None,
        kind="memory",
        visible=True,
    )
    other = GraphNode(id="n2", title="Plain", card_type="brain", kind="card", visible=True)
    dot = project_graph([tricky, other], [Link('id"1', "n2", "cites")]).to_dot()
    assert dot == (
        'digraph "memories" {\n'
        "  node [shape=box];\n"
        '  "id\\"1" [label="He said \\"hi\\"\\nthen \\\\left\\n \\n(memory)"];\n'
        '  "n2" [label="Plain\\n(brain)"];\n'
        '  "id\\"1" -> "n2" [label="cites"];\n'
        "}\n"
    )
    # Every statement stays on its own line and every quoted string is closed.
    for line in dot.splitlines()[2:-1]:
        unescaped = re.sub(r"\\.", "", line)
        assert unescaped.count('"') % 2 == 0


def test_tree_expands_each_node_once_and_marks_a_cycle() -> None:
    nodes = [node("a", "A"), node("b", "B"), node("c", "C"), node("d", "D"), node("e", "E")]
    links = [
        Link("a", "b"),
        Link("b", "c", "depends_on"),
        Link("c", "a"),
        Link("a", "d"),
        Link("d", "c"),
    ]
    graph = project_graph(nodes, links)
    assert graph.tree_lines(["a"]) == [
        "A [knowledge] (a)",
        "├── B [knowledge] (b)",
        "│   └── depends_on: C [knowledge] (c)",
        "│       └── A [knowledge] (a) [see above]",
        "└── D [knowledge] (d)",
        "    └── C [knowledge] (c) [see above]",
    ]
    # Without roots: E has no incoming link; the a-b-c cycle has none without one, so it is
    # entered at its first node in title order, and every node is expanded exactly once.
    lines = graph.tree_lines(label=lambda n: n.title)
    assert lines == [
        "E",
        "A",
        "├── B",
        "│   └── depends_on: C",
        "│       └── A [see above]",
        "└── D",
        "    └── C [see above]",
    ]


def test_tree_roots_must_be_visible_nodes() -> None:
    graph = project_graph([node("a"), node("hidden", visible=False)], [])
    with pytest.raises(NotFoundError, match="not a visible asset"):
        graph.tree_lines(["hidden"])


def test_tree_handles_a_chain_longer_than_the_recursion_limit() -> None:
    count = 5000
    nodes = [node(f"n{i:05d}") for i in range(count)]
    links = [Link(f"n{i:05d}", f"n{i + 1:05d}") for i in range(count - 1)]
    lines = project_graph(nodes, links).tree_lines()
    assert len(lines) == count
    assert lines[0] == "N00000 [knowledge] (n00000)"
    assert lines[-1].endswith("└── N04999 [knowledge] (n04999)")


def test_graph_of_ten_thousand_nodes_and_fifty_thousand_links() -> None:
    rng = random.Random(20240611)
    nodes = [
        GraphNode(f"asset-{i:05d}", f"title {rng.randrange(1000)}", None, "memory", i % 7 != 0)
        for i in range(10_000)
    ]
    links: list[Link] = []
    while len(links) < 50_000:
        source, target = rng.randrange(10_000), rng.randrange(10_000)
        if source != target:
            links.append(Link(f"asset-{source:05d}", f"asset-{target:05d}"))

    graph = project_graph(nodes, links)

    visible = {n.id for n in nodes if n.visible}
    expected_edges = {
        (link.source, link.target)
        for link in links
        if link.source in visible and link.target in visible
    }
    assert len(graph.nodes) == len(visible) == 10_000 - len(range(0, 10_000, 7))
    assert {n.id for n in graph.nodes} == visible
    assert len(graph.edges) == len(expected_edges)
    assert {(e.source, e.target) for e in graph.edges} == expected_edges
    keys = [(e.source, e.target, e.relation) for e in graph.edges]
    assert keys == sorted(keys)
    titles = [(n.title.casefold(), n.title, n.id) for n in graph.nodes]
    assert titles == sorted(titles)
    assert isinstance(graph, Graph)
