"""A stateful property test of the revision DAG against an independent model.

Random sequences of puts, edits, stale edits, forks from older revisions (what a concurrent edit
on another device produces), tombstones, resolutions and reopenings run against a real store.
After every step the vault must agree with a model that knows only each revision's parents:
heads are the revisions no other revision names as a parent, several heads are a conflict, a
single tombstone head is a deletion, and history never loses a revision. Revision timestamps come
from a clock the test sets, equal or running backwards at times, as clocks on different devices
do; order must come from the DAG.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import memories.vault.revision as revision_module
from memories.errors import ConflictError, MemoriesError, NotFoundError, UsageError
from memories.store import Store
from memories.vault import Vaults
from tests.memories.vault.support import PASSWORD, new_vault_store

TIMES = (
    "2099-01-01T00:00:00.000Z",
    "2099-01-01T00:00:00.001Z",
    "2098-12-31T23:59:59.999Z",
)
CLOCK = [TIMES[0]]

Text = tuple[str, str]  # (title, body); None stands for a tombstone

titles = st.sampled_from(["alpha", "beta", "gamma"])
bodies = st.sampled_from(["", "one", "two\nlines"])
changes = st.one_of(
    st.fixed_dictionaries({"title": titles}),
    st.fixed_dictionaries({"body": bodies}),
    st.fixed_dictionaries({"title": titles, "body": bodies}),
)
times = st.sampled_from(TIMES)
picks = st.integers(min_value=0, max_value=1_000)


def applied(text: Text, change: dict[str, str]) -> Text:
    return (change.get("title", text[0]), change.get("body", text[1]))


@dataclass
class AssetModel:
    """What the model knows of one asset: each revision's parents and text, and the newest."""

    id: str
    parents: dict[str, frozenset[str]] = field(default_factory=dict)
    text: dict[str, Text | None] = field(default_factory=dict)
    newest: str = ""

    @property
    def heads(self) -> set[str]:
        named = set().union(*self.parents.values())
        return set(self.parents) - named

    @property
    def conflicted(self) -> bool:
        return len(self.heads) > 1

    @property
    def deleted(self) -> bool:
        heads = self.heads
        return len(heads) == 1 and self.text[next(iter(heads))] is None

    def children(self, revision: str) -> set[str]:
        return {r for r, parents in self.parents.items() if revision in parents}

    def descendants(self, revision: str) -> set[str]:
        found: set[str] = set()
        pending = [revision]
        while pending:
            for child in self.children(pending.pop()):
                if child not in found:
                    found.add(child)
                    pending.append(child)
        return found

    def start_texts(self) -> set[Text]:
        """What an edit may start from: the newest revision's text, or, if that is a tombstone,
        a live revision whose every descendant is a tombstone (a last live version)."""
        newest = self.text[self.newest]
        if newest is not None:
            return {newest}
        return {
            text
            for rid, text in self.text.items()
            if text is not None and all(self.text[d] is None for d in self.descendants(rid))
        }

    def add(self, revision: str, parents: set[str], text: Text | None) -> None:
        assert revision not in self.parents, "a new revision reused an existing id"
        assert parents <= set(self.parents), "a revision names a parent outside the history"
        self.parents[revision] = frozenset(parents)
        self.text[revision] = text
        self.newest = revision


class DagMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.TemporaryDirectory(prefix="memories-dag-")
        self.path = new_vault_store(Path(self.folder.name) / "memories.db")
        self.store = Store.open(self.path)
        self.store.unlock(PASSWORD)
        self.vaults = Vaults(self.store)
        self.assets: list[AssetModel] = []
        self.reopened = 0

    # -- helpers ---------------------------------------------------------------------------------

    def pick(self, index: int) -> AssetModel:
        return self.assets[index % len(self.assets)]

    def refused(self, error: type[MemoriesError], call: Callable[[], object]) -> None:
        before = self.store.seq
        with pytest.raises(error):
            call()
        assert self.store.seq == before, "a refused operation committed something"

    def written(
        self,
        asset: AssetModel,
        revision: str,
        parents: set[str],
        starts: set[Text],
        change: dict[str, str],
    ) -> None:
        """Record a live revision after checking its text is ``change`` over an allowed start."""
        view = self.vaults.get(asset.id, revision=revision)
        assert view.content is not None
        text = (view.content.title, view.content.body)
        assert text in {applied(start, change) for start in starts}
        asset.add(revision, parents, text)

    def snapshot(self) -> object:
        return (
            [s.to_dict() for s in self.vaults.list_assets()],
            {
                a.id: (
                    self.vaults.resolve_asset(a.id).heads,
                    [e.to_dict() for e in self.vaults.history(a.id)],
                )
                for a in self.assets
            },
        )

    # -- rules -----------------------------------------------------------------------------------

    @rule(title=titles, body=bodies, at=times)
    def put(self, title: str, body: str, at: str) -> None:
        CLOCK[0] = at
        saved = self.vaults.put(None, "memory", title=title, body=body)
        asset = AssetModel(saved.asset_id)
        asset.add(saved.revision, set(), (title, body))
        self.assets.append(asset)
        assert saved.heads == (saved.revision,)

    @precondition(lambda self: self.assets)
    @rule(pick=picks, change=changes, at=times, short=st.booleans())
    def update(self, pick: int, change: dict[str, str], at: str, short: bool) -> None:
        CLOCK[0] = at
        asset = self.pick(pick)
        if asset.conflicted:
            self.refused(ConflictError, lambda: self.vaults.update(asset.id, **change))
            return
        [head] = asset.heads
        base = head.removeprefix("sha256:")[:12] if short else head
        saved = self.vaults.update(asset.id, base=base, **change)
        assert saved.heads == (saved.revision,)
        self.written(asset, saved.revision, {head}, asset.start_texts(), change)

    @precondition(lambda self: self.assets)
    @rule(pick=picks, which=picks, change=changes)
    def stale_update(self, pick: int, which: int, change: dict[str, str]) -> None:
        asset = self.pick(pick)
        base = list(asset.parents)[which % len(asset.parents)]
        if asset.heads == {base}:
            return  # not stale: the ordinary update rule covers it
        self.refused(ConflictError, lambda: self.vaults.update(asset.id, base=base, **change))

    @precondition(lambda self: self.assets)
    @rule(pick=picks, which=picks, change=changes, at=times)
    def fork(self, pick: int, which: int, change: dict[str, str], at: str) -> None:
        """An edit made from an older revision, kept deliberately: a concurrent edit."""
        CLOCK[0] = at
        asset = self.pick(pick)
        base = list(asset.parents)[which % len(asset.parents)]
        base_text = asset.text[base]
        starts = {base_text} if base_text is not None else asset.start_texts()
        saved = self.vaults.update(asset.id, base=base, fork=True, **change)
        self.written(asset, saved.revision, {base}, starts, change)
        assert set(saved.heads) == asset.heads

    @precondition(lambda self: self.assets)
    @rule(pick=picks, at=times)
    def tombstone(self, pick: int, at: str) -> None:
        CLOCK[0] = at
        asset = self.pick(pick)
        if asset.conflicted:
            self.refused(ConflictError, lambda: self.vaults.tombstone(asset.id))
            return
        if asset.deleted:
            self.refused(UsageError, lambda: self.vaults.tombstone(asset.id))
            return
        heads = asset.heads
        saved = self.vaults.tombstone(asset.id)
        asset.add(saved.revision, heads, None)

    @precondition(lambda self: self.assets)
    @rule(
        pick=picks,
        mode=st.sampled_from(["all", "unnamed", "delete", "missing", "extra"]),
        change=changes,
        at=times,
        order=st.randoms(use_true_random=False),
    )
    def resolve(
        self, pick: int, mode: str, change: dict[str, str], at: str, order: random.Random
    ) -> None:
        CLOCK[0] = at
        asset = self.pick(pick)
        # Model order (the order of writing) rather than random ids keeps each example
        # reproducible while hypothesis shrinks it.
        heads = [r for r in asset.parents if r in asset.heads]
        named = [h.removeprefix("sha256:")[:10] for h in heads]
        order.shuffle(named)
        if not asset.conflicted:
            self.refused(UsageError, lambda: self.vaults.resolve(asset.id, parents=named))
            return
        if mode == "missing":
            self.refused(UsageError, lambda: self.vaults.resolve(asset.id, parents=named[1:]))
            return
        if mode == "extra":
            others = [r for r in asset.parents if r not in asset.heads]
            if others:
                wrong = [*named, others[0]]
                self.refused(UsageError, lambda: self.vaults.resolve(asset.id, parents=wrong))
            return
        starts = asset.start_texts()
        if mode == "delete":
            saved = self.vaults.resolve(asset.id, parents=named, delete=True)
            asset.add(saved.revision, set(heads), None)
        else:
            parents = None if mode == "unnamed" else named
            saved = self.vaults.resolve(asset.id, parents=parents, **change)
            self.written(asset, saved.revision, set(heads), starts, change)
        assert saved.heads == (saved.revision,)

    @precondition(lambda self: self.assets and self.reopened < 2)  # unlock runs the KDF
    @rule()
    def reopen(self) -> None:
        self.reopened += 1
        before = self.snapshot()
        self.store.close()
        self.store = Store.open(self.path)
        self.store.unlock(PASSWORD)
        self.vaults = Vaults(self.store)
        assert self.snapshot() == before

    # -- what must always hold -------------------------------------------------------------------

    def check_history(self, asset: AssetModel) -> None:
        history = self.vaults.history(asset.id)
        assert {e.revision: set(e.parents) for e in history} == asset.parents
        position = {e.revision: i for i, e in enumerate(history)}
        for i, entry in enumerate(history):
            assert all(position[p] > i for p in entry.parents), "a parent listed first"
            assert entry.head == (entry.revision in asset.heads)
            text = asset.text[entry.revision]
            assert entry.tombstone == (text is None)
            assert entry.title == ("" if text is None else text[0])

    @invariant()
    def matches_the_model(self) -> None:
        listed = {s.id: s for s in self.vaults.list_assets()}
        assert set(listed) == {a.id for a in self.assets if not a.deleted}
        for asset in self.assets:
            state = self.vaults.resolve_asset(asset.id)
            assert set(state.heads) == asset.heads
            assert (state.conflicted, state.deleted) == (asset.conflicted, asset.deleted)
            assert state.newest == asset.newest
            assert state.revisions == len(asset.parents)
            self.check_history(asset)
            if asset.deleted:
                with pytest.raises(NotFoundError):
                    self.vaults.get(asset.id)
                continue
            view = self.vaults.get(asset.id)
            assert view.content is not None
            assert view.revision == asset.newest
            assert (view.content.title, view.content.body) == asset.text[asset.newest]
            assert listed[asset.id].title == view.content.title
            assert listed[asset.id].conflicted == asset.conflicted

    def teardown(self) -> None:
        try:
            if self.store.unlocked:
                report = self.vaults.verification()
                assert report.problems == ()
                assert report.revisions == 1 + sum(len(a.parents) for a in self.assets)
                self.store.verify()
        finally:
            self.store.close()
            self.folder.cleanup()


def test_the_revision_dag_matches_an_independent_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(revision_module, "now", lambda: CLOCK[0])
    run_state_machine_as_test(
        DagMachine,
        settings=settings(
            max_examples=10,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
