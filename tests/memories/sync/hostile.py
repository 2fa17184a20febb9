"""A malicious transport: it reorders and duplicates listings, serves stale ones, withholds
and truncates objects. Everything it hands back is still bytes some device once stored."""

from __future__ import annotations

import random

from memories.sync.errors import ObjectMissing
from memories.sync.transports import MemoryTransport


class HostileTransport:
    """Wraps a shared ``MemoryTransport``; each trick is switched on by the test."""

    def __init__(self, inner: MemoryTransport, seed: int = 0) -> None:
        self.inner = inner
        self.random = random.Random(seed)
        self.withheld: set[str] = set()
        self.truncate: set[str] = set()
        self.stale: list[str] | None = None  # a listing frozen at some earlier moment
        self.duplicate = True
        self.gets: list[str] = []

    @property
    def description(self) -> str:
        return "hostile"

    def put(self, name: str, data: bytes) -> None:
        self.inner.put(name, data)

    def get(self, name: str) -> bytes:
        self.gets.append(name)
        if name in self.withheld:
            raise ObjectMissing("withheld")
        data = self.inner.get(name)
        if name in self.truncate:
            return data[: len(data) // 2]
        return data

    def freeze_listing(self) -> None:
        self.stale = self.inner.list()

    def list(self) -> list[str]:
        names = list(self.stale if self.stale is not None else self.inner.list())
        if self.duplicate:
            names = names + names[: len(names) // 2]
        self.random.shuffle(names)
        return names
