"""Convergence: three devices (separate stores and keys) edit one vault at random — new
memories, edits and concurrent edits of one memory, conflict resolutions, deletions, a policy
change — go offline and come back, and sync through one in-memory storage in random order.
Once everyone syncs until quiet, every device shows the same vault (the same heads, conflicts
and policy chain per asset) and no write any device acknowledged is missing anywhere.

Bounded for ``make test`` (a few seconds): ``MEMORIES_CONVERGENCE_EXAMPLES`` raises it for a
soak run.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memories.devices.membership import change_policy
from memories.devices.pairing import vault_chain
from memories.errors import ConflictError, NotFoundError
from memories.store import Store
from memories.sync.engine import load_state
from memories.sync.merge import list_quarantine
from memories.sync.queue import TARGETS_KEY, Targets
from memories.sync.transports import MemoryTransport
from memories.vault import Vaults
from tests.memories.devices.support import PASSWORD
from tests.memories.sync.devices import household, sync_vaults
from tests.memories.sync.support import TARGET
from tests.memories.vault.support import another_device

NAMES = ("desk", "laptop", "tablet")
EXAMPLES = int(os.environ.get("MEMORIES_CONVERGENCE_EXAMPLES", "8"))
replica_index = st.integers(min_value=0, max_value=len(NAMES) - 1)


class Replicas(RuleBasedStateMachine):
    template: Path
    root: Path
    counter = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        folder = self.root / f"example-{next(self.counter)}"
        shutil.copytree(self.template, folder)
        self.stores: list[Store] = []
        self.vaults: list[Vaults] = []
        for name in NAMES:
            store = Store.open(folder / f"{name}.db", state_dir=folder / f"{name}-state")
            store.unlock(PASSWORD, accept_rollback=True)  # a copied file: its own anchors
            self.stores.append(store)
            self.vaults.append(Vaults(store))
        self.transport = MemoryTransport()
        self.online = [True] * len(NAMES)
        self.clock = 0.0
        # Every revision some device acknowledged, by asset: none may go missing.
        self.acknowledged: dict[str, set[str]] = {}
        self.titles = itertools.count()
        self.policy_changes = 0

    @initialize()
    def everyone_writes_then_syncs(self) -> None:
        for i in range(len(NAMES)):
            self.write_a_new_memory(i)
        self.quiesce()

    # -- helpers -----------------------------------------------------------------------------

    def assets_of(self, i: int) -> list[str]:
        have = []
        for asset_id in sorted(self.acknowledged):
            try:
                self.vaults[i].resolve_asset(asset_id)
            except NotFoundError:  # not arrived here yet
                continue
            have.append(asset_id)
        return have

    def note(self, asset_id: str, revision: str) -> None:
        self.acknowledged.setdefault(asset_id, set()).add(revision)

    def sync(self, i: int) -> None:
        self.clock += 10_000.0  # every waiting descriptor is due again
        sync_vaults(self.vaults[i], self.transport, at=self.clock)

    def quiesce(self) -> None:
        for _ in range(6):
            quiet = True
            for i in range(len(NAMES)):
                self.clock += 10_000.0
                report = sync_vaults(self.vaults[i], self.transport, at=self.clock)
                quiet = quiet and report.merged == report.policies == report.audit == 0
                quiet = quiet and report.pending == 0
            if quiet:
                return
        raise AssertionError("the devices did not become quiet")

    # -- rules -------------------------------------------------------------------------------

    @rule(i=replica_index)
    def write_a_new_memory(self, i: int) -> None:
        title = f"note {next(self.titles)}"
        saved = self.vaults[i].put(None, "memory", title=title, body=f"by {NAMES[i]}")
        self.note(saved.asset_id, saved.revision)

    @rule(i=replica_index, pick=st.integers(min_value=0), fork=st.booleans())
    def edit_a_memory(self, i: int, pick: int, fork: bool) -> None:
        have = self.assets_of(i)
        if not have:
            return
        asset_id = have[pick % len(have)]
        v = self.vaults[i]
        state = v.resolve_asset(asset_id)
        title = f"edit {next(self.titles)}"
        if state.conflicted:
            saved = v.resolve(asset_id, parents=list(state.heads), title=title)
        elif state.deleted:
            return
        elif fork:  # an edit of an older revision: a conflict on purpose
            older = [e.revision for e in v.history(asset_id) if not e.head]
            if not older:
                return
            saved = v.update(asset_id, base=older[0], fork=True, title=title)
        else:
            try:
                saved = v.update(asset_id, title=title, body=f"edited on {NAMES[i]}")
            except ConflictError:
                return
        self.note(asset_id, saved.revision)

    @rule(pick=st.integers(min_value=0))
    def every_device_edits_one_memory_at_once(self, pick: int) -> None:
        if not self.acknowledged:
            return
        asset_id = sorted(self.acknowledged)[pick % len(self.acknowledged)]
        for i, v in enumerate(self.vaults):  # no sync in between: concurrent edits
            try:
                state = v.resolve_asset(asset_id)
            except NotFoundError:
                continue
            if state.conflicted or state.deleted:
                continue
            saved = v.update(asset_id, body=f"{NAMES[i]} at the same time")
            self.note(asset_id, saved.revision)

    @rule(i=replica_index, pick=st.integers(min_value=0))
    def delete_a_memory(self, i: int, pick: int) -> None:
        have = self.assets_of(i)
        if not have:
            return
        asset_id = have[pick % len(have)]
        state = self.vaults[i].resolve_asset(asset_id)
        if state.conflicted or state.deleted:
            return
        saved = self.vaults[i].tombstone(asset_id)
        self.note(asset_id, saved.revision)

    @rule(i=replica_index)
    def go_offline_or_back(self, i: int) -> None:
        self.online[i] = not self.online[i]

    @rule(i=replica_index)
    def sync_one(self, i: int) -> None:
        if self.online[i]:
            self.sync(i)

    @precondition(lambda self: self.policy_changes < 2)
    @rule()
    def the_desk_allows_another_device(self) -> None:
        desk = self.vaults[0]
        record = desk.resolve_vault(None)
        head = vault_chain(desk.store, record)[-1]
        newcomer = another_device(desk.identity)
        devices = {**head.users_by_device(), newcomer.device_fingerprint: head.owner()}
        change_policy(desk, None, devices=devices, certificates=(newcomer.certificate,))
        self.policy_changes += 1

    # -- the end: everyone online, synced until quiet ---------------------------------------

    def teardown(self) -> None:
        try:
            self.online = [True] * len(NAMES)
            self.quiesce()
            views = [self.view(i) for i in range(len(NAMES))]
            for name, view in zip(NAMES[1:], views[1:], strict=True):
                assert view == views[0], f"{name} differs from the desk"
            chains = {v.resolve_vault(None).policies for v in self.vaults}
            assert len(chains) == 1, "the policy chains differ"
            for i, v in enumerate(self.vaults):
                assert list_quarantine(v.store) == [], NAMES[i]
                state = load_state(v.store)
                assert state.inbox == {} and state.outbox == [], NAMES[i]
                for asset_id, revisions in self.acknowledged.items():
                    held = {entry.revision for entry in v.history(asset_id)}
                    assert revisions <= held, f"{NAMES[i]} lost a write of {asset_id}"
        finally:
            for v, store in zip(self.vaults, self.stores, strict=True):
                v.close()
                store.close()

    def view(self, i: int) -> dict[str, tuple[object, ...]]:
        found = {}
        for asset_id in self.acknowledged:
            state = self.vaults[i].resolve_asset(asset_id)
            # The summary of a conflicted asset is its most recently merged head, which
            # depends on arrival order; heads, flags and a settled title do not.
            title = None if state.conflicted else state.title
            found[asset_id] = (state.heads, state.conflicted, state.deleted, title)
        return found


@pytest.mark.timeout(300)
def test_devices_converge_after_random_edits_offline_periods_and_syncs(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    homes = household(template, "laptop", "tablet")
    for name in NAMES:
        with Store.open(homes[name], state_dir=template / f"{name}-state") as store:
            store.unlock(PASSWORD, accept_rollback=True)
            m = store.mutation()
            m.put(TARGETS_KEY, Targets((TARGET,)).to_bytes())
            store.commit(m, action="sync.target.add")
    for extra in template.iterdir():
        if extra.is_dir():
            shutil.rmtree(extra)  # each example keeps its own anchors
    Replicas.template = template
    Replicas.root = tmp_path
    run_state_machine_as_test(
        Replicas,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
