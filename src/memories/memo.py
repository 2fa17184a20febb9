"""A small bounded map of recent results, shared by threads.

Verifying a signature or parsing a certificate gives the same answer for the same bytes, and
the same few certificates and descriptors come back with every object a device writes; a
:class:`Memo` keeps the latest answers so each is worked out once. What it holds must be safe
to keep while unlocked: verdicts and public records, never keys or plaintext.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most ``size`` entries; the least recently used goes first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key``, or None."""
        with self._guard:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the oldest entry beyond the bound."""
        with self._guard:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
