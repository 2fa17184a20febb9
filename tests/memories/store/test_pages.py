"""Entries packed into pages behave exactly like a dictionary, across commits and reopens."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.errors import IntegrityError
from memories.store import Store
from memories.store.pages import PAGE_TARGET, PageIndex, decode_page, encode_page
from tests.memories.store.support import PASSWORD, new_store, unlocked

_keys = st.sampled_from([f"k{i}" for i in range(40)])
_values = st.binary(min_size=0, max_size=6000)
_change = st.tuples(_keys, st.one_of(st.none(), _values))
_commit = st.lists(_change, min_size=1, max_size=6)


def test_page_encoding_round_trips_and_rejects_truncation() -> None:
    items = [("a", b""), ("ключ", b"\x00" * 70000), ("b", b"v")]
    data = encode_page(items)
    assert decode_page(data) == items
    for cut in (1, 3, len(data) - 1):
        with pytest.raises(IntegrityError):
            decode_page(data[:cut])


def test_plan_keeps_pages_near_the_target_size() -> None:
    index = PageIndex()
    entries: dict[str, bytes] = {}
    for round_ in range(20):
        changes: dict[str, bytes | None] = {f"k{round_}-{i}": b"x" * 1000 for i in range(10)}
        plan = index.plan(changes, entries)
        index.apply(plan, round_ + 1)
        entries.update({k: v for k, v in changes.items() if v is not None})
    sizes = [page.size for page in index.pages.values()]
    assert len(sizes) >= 200 * 1000 // PAGE_TARGET
    assert max(sizes) <= PAGE_TARGET
    assert sum(len(page.keys) for page in index.pages.values()) == 200


def test_a_commit_rewrites_only_the_pages_it_touches(tmp_path: Path) -> None:
    path = new_store(tmp_path / "pages.db")
    with unlocked(path) as store:
        for batch in range(10):
            mutation = store.mutation()
            for i in range(20):
                mutation.put(f"asset/{batch}/{i}", b"s" * 900)
            store.commit(mutation, action="fill")
        pages_before = dict(store._conn.execute("SELECT id, seq FROM state WHERE kind = 0"))
        mutation = store.mutation()
        mutation.put("asset/3/7", b"changed")
        store.commit(mutation, action="edit")
        pages_after = dict(store._conn.execute("SELECT id, seq FROM state WHERE kind = 0"))
        changed = [pid for pid in pages_after if pages_after[pid] != pages_before.get(pid)]
        assert len(changed) == 1
        assert len(pages_before) > 10


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(commits=st.lists(_commit, min_size=1, max_size=12))
def test_entries_match_a_dictionary_model_across_reopens(
    tmp_path_factory: pytest.TempPathFactory, commits: list[list[tuple[str, bytes | None]]]
) -> None:
    path = new_store(tmp_path_factory.mktemp("model") / "m.db")
    model: dict[str, bytes] = {}
    store = Store.open(path)
    store.unlock(PASSWORD)
    try:
        for number, changes in enumerate(commits):
            mutation = store.mutation()
            for key, value in changes:
                if value is None:
                    mutation.delete(key)
                    model.pop(key, None)
                else:
                    mutation.put(key, value)
                    model[key] = value
            store.commit(mutation, action="model")
            assert dict(store.entries()) == model
            if number % 4 == 3:
                store.close()
                store = Store.open(path)
                store.unlock(PASSWORD)
                assert dict(store.entries()) == model
        assert store.verify()["entries"] == len(model)
    finally:
        store.close()
