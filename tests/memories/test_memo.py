"""The bounded memo: recent entries kept, the least recently used dropped first."""

from __future__ import annotations

from memories.memo import Memo


def test_the_least_recently_used_entry_goes_first() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "a" is now the most recent
    memo.put("c", 3)
    assert memo.get("b") is None
    assert (memo.get("a"), memo.get("c")) == (1, 3)


def test_putting_a_kept_key_again_replaces_it_without_growing() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    memo.put("a", 10)
    memo.put("c", 3)  # "b" is the oldest now
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (10, None, 3)
