"""Which blobs a store holds, remembered for the current unlock.

A sync pass asks about the same blobs again and again: ``prepare`` about every object the
inbox's descriptors announce, ``ack`` whether each revision it meets is stored — and a
descriptor of thousands of objects stays in the inbox, asked about in every pass, until the
last of them is merged. Blobs are never deleted, so a blob found once, or committed by a
pass, is remembered (until the store's unlock generation changes); one not found is asked
again every time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final
from weakref import WeakKeyDictionary

from memories.store import Store

__all__ = ["has_blob", "remember"]

#: How many blob keys are remembered per store before starting over.
_LIMIT: Final = 1 << 16
_FOUND: WeakKeyDictionary[Store, tuple[int, set[str]]] = WeakKeyDictionary()
_GUARD = threading.Lock()


def has_blob(store: Store, key: str) -> bool:
    """Whether ``store`` holds a blob under ``key``. Raises what ``Store.has_blob`` raises."""
    with _GUARD:
        found = _FOUND.get(store)
        if found is not None and found[0] == store.generation and key in found[1]:
            return True
    if not store.has_blob(key):
        return False
    remember(store, (key,))
    return True


def remember(store: Store, keys: Iterable[str]) -> None:
    """Note that ``store`` holds blobs under ``keys`` (found, or just committed)."""
    generation = store.generation
    with _GUARD:
        found = _FOUND.get(store)
        if found is None or found[0] != generation:
            found = _FOUND[store] = (generation, set())
        for key in keys:
            if len(found[1]) >= _LIMIT:
                found[1].clear()
            found[1].add(key)
