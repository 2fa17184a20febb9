"""Links between cards and the graph projection over a real store: only current, unambiguous,
visible cards and the edges between them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import NotFoundError, UsageError
from memories.vault import Link, Vaults
from tests.memories.vault.support import dumped, new_vault_store, opened, refused


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_vault_store(tmp_path / "memories.db")


@pytest.fixture
def vaults(store_path: Path) -> Iterator[Vaults]:
    with opened(store_path) as v:
        yield v


def card(vaults: Vaults, title: str, *, vault: str | None = None, private: bool = False) -> str:
    saved = vaults.put(
        vault,
        "card",
        title=title,
        card_type="knowledge",
        metadata={"topic": title},
        private=private,
    )
    return saved.asset_id


def edges(vaults: Vaults, *, elevated: bool = False) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.relation) for e in vaults.graph(elevated=elevated).edges}


def nodes(vaults: Vaults, *, elevated: bool = False) -> set[str]:
    return {n.id for n in vaults.graph(elevated=elevated).nodes}


def test_link_and_unlink_between_cards(vaults: Vaults) -> None:
    a, b, c = (card(vaults, t) for t in ("Alpha", "Beta", "Gamma"))
    assert vaults.link(a, b) == Link(a, b, "related")
    assert vaults.link(a[:6], b[:6], " depends_on ") == Link(a, b, "depends_on")
    vaults.link(b, c, "see-also")
    # Linking again is a no-op: nothing is committed.
    before = vaults.store.seq
    assert vaults.link(a, b) == Link(a, b, "related")
    assert vaults.store.seq == before
    assert edges(vaults) == {(a, b, "related"), (a, b, "depends_on"), (b, c, "see-also")}
    graph = vaults.graph()
    assert [n.title for n in graph.nodes] == ["Alpha", "Beta", "Gamma"]
    assert {n.card_type for n in graph.nodes} == {"knowledge"}
    view = vaults.get(a)
    assert {(link.target, link.relation) for link in view.links} == {
        (b, "related"),
        (b, "depends_on"),
    }
    assert vaults.unlink(a, b, "depends_on") == 1
    assert edges(vaults) == {(a, b, "related"), (b, c, "see-also")}
    vaults.link(a, b, "depends_on")
    assert vaults.unlink(a, b) == 2  # no relation: every edge from a to b
    assert edges(vaults) == {(b, c, "see-also")}
    # Links do not change content: no revision was written for them.
    assert vaults.get(a).revisions == 1


def test_bad_links_are_refused_and_nothing_is_written(vaults: Vaults) -> None:
    a, b = card(vaults, "Alpha"), card(vaults, "Beta")
    vaults.create_vault("work")
    elsewhere = card(vaults, "Elsewhere", vault="work")
    memory = vaults.put(None, "memory", title="Plain memory").asset_id
    gone = card(vaults, "Gone")
    vaults.tombstone(gone)
    for source, target, relation in (
        (a, elsewhere, None),  # across vaults
        (elsewhere, a, None),
        (a, memory, None),  # to a non-card
        (memory, a, None),
        (a, gone, None),  # to a deleted card
        (gone, a, None),
        (a, a, None),  # to itself
        (a, b, "Not A Relation"),
        (a, b, "x" * 41),
    ):
        refused(vaults, UsageError, lambda s=source, t=target, r=relation: vaults.link(s, t, r))
    refused(vaults, NotFoundError, lambda: vaults.link(a, "0" * 32))
    refused(vaults, UsageError, lambda: vaults.link(a, "zz"))
    assert edges(vaults) == set()
    assert vaults.get(a).links == ()


def test_unlinking_a_missing_link_is_not_found(vaults: Vaults) -> None:
    a, b = card(vaults, "Alpha"), card(vaults, "Beta")
    refused(vaults, NotFoundError, lambda: vaults.unlink(a, b))
    vaults.link(a, b, "depends_on")
    refused(vaults, NotFoundError, lambda: vaults.unlink(a, b, "related"))
    refused(vaults, NotFoundError, lambda: vaults.unlink(b, a))
    assert edges(vaults) == {(a, b, "depends_on")}


def test_the_graph_hides_conflicted_deleted_and_private_cards_with_their_edges(
    vaults: Vaults,
) -> None:
    hub = card(vaults, "Hub")
    plain = card(vaults, "Plain")
    conflicted = card(vaults, "Conflicted")
    deleted = card(vaults, "Deleted")
    secret = card(vaults, "Secret title sentinel", private=True)
    vaults.put(None, "memory", title="Not a card")
    for other in (plain, conflicted, deleted, secret):
        vaults.link(hub, other)
        vaults.link(other, hub, "depends_on")
    first = vaults.get(conflicted).revision
    vaults.update(conflicted, title="Conflicted v2")
    vaults.update(conflicted, base=first, fork=True, title="Conflicted v2b")
    vaults.tombstone(deleted)

    assert nodes(vaults) == {hub, plain}
    assert edges(vaults) == {(hub, plain, "related"), (plain, hub, "depends_on")}
    shown = dumped(vaults.graph().to_dict()) + vaults.graph().to_dot()
    for hidden in (conflicted, deleted, secret, "sentinel", "Conflicted", "Deleted"):
        assert hidden not in shown
    # Elevation shows the private card; conflicted and deleted cards stay out.
    assert nodes(vaults, elevated=True) == {hub, plain, secret}
    assert (hub, secret, "related") in edges(vaults, elevated=True)
    assert conflicted not in dumped(vaults.graph(elevated=True).to_dict())

    # Resolving the conflict and restoring the deleted card bring them (and their edges) back.
    vaults.resolve(conflicted, title="Conflicted merged")
    vaults.update(deleted, title="Deleted no more")
    assert nodes(vaults) == {hub, plain, conflicted, deleted}
    assert edges(vaults) == {(hub, other, "related") for other in (plain, conflicted, deleted)} | {
        (other, hub, "depends_on") for other in (plain, conflicted, deleted)
    }
    titles = {n.id: n.title for n in vaults.graph().nodes}
    assert titles[conflicted] == "Conflicted merged"


def test_the_graph_is_per_vault(vaults: Vaults) -> None:
    a, b = card(vaults, "Alpha"), card(vaults, "Beta")
    vaults.link(a, b)
    vaults.create_vault("work")
    c, d = card(vaults, "Gamma", vault="work"), card(vaults, "Delta", vault="work")
    vaults.link(c, d, "depends_on")
    assert nodes(vaults) == {a, b}
    work = vaults.graph("work")
    assert {n.id for n in work.nodes} == {c, d}
    assert work.edges == (Link(c, d, "depends_on"),)
    assert vaults.graph("device").nodes == ()


def test_links_survive_reopening(store_path: Path) -> None:
    with opened(store_path) as vaults:
        a, b, c = (card(vaults, t) for t in ("Alpha", "Beta", "Gamma"))
        vaults.link(a, b)
        vaults.link(b, c, "depends_on")
        vaults.link(c, a, "see_also")
        vaults.unlink(c, a)
        expected = edges(vaults)
    with opened(store_path) as vaults:
        assert edges(vaults) == expected == {(a, b, "related"), (b, c, "depends_on")}
        assert {(link.target, link.relation) for link in vaults.get(b).links} == {(c, "depends_on")}
        vaults.verify()
        vaults.store.verify()
