"""A stale edit kept with --fork becomes a conflict that resolve merges."""

from __future__ import annotations

from tests.memories.cli.conftest import Memories


def test_fork_from_an_old_base_then_resolve(store: Memories) -> None:
    first = store.ok("put", "v1", "--title", "doc")
    short = first["short_id"]
    second = store.ok("edit", short, "v2 from laptop")

    stale = store.fails(1, "edit", short, "v2 from phone", "--base", first["revision"])
    assert stale["code"] == "conflict"
    forked = store.ok("edit", short, "v2 from phone", "--base", first["revision"], "--fork")
    assert len(forked["heads"]) == 2
    human = store("conflicts")
    assert human.code == 0 and "doc" in human.stdout and "resolve" in human.stdout

    conflicted = store.ok("conflicts")["summaries"]
    assert [s["id"] for s in conflicted] == [first["asset"]]
    assert store.fails(1, "edit", short, "one more")["code"] == "conflict"

    resolved = store.ok(
        "resolve",
        short,
        "v3 merged",
        "--parent",
        second["revision"],
        "--parent",
        forked["revision"],
    )
    assert resolved["heads"] == [resolved["revision"]]
    assert store.ok("conflicts")["summaries"] == []
    assert store.ok("show", short)["body"] == "v3 merged"
    parents = {e["revision"]: e["parents"] for e in store.ok("history", short)["entries"]}
    assert set(parents[resolved["revision"]]) == {second["revision"], forked["revision"]}

    # A conflict may also be resolved by deleting the memory.
    store.ok("edit", short, "c", "--base", second["revision"], "--fork")
    assert len(store.ok("conflicts")["summaries"]) == 1
    store.ok("resolve", short, "--delete")
    assert store.ok("conflicts")["summaries"] == []
    assert store.ok("ls")["summaries"] == []
